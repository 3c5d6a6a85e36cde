//! The printed manifests: which objects, their labels, their security and their bounds.

use super::*;

fn options(testbed: bool) -> ManifestOptions {
    ManifestOptions {
        testbed,
        ..ManifestOptions::new("chaos", "0123456789abcdef0123")
    }
}

fn kinds(documents: &[serde_json::Value]) -> Vec<String> {
    documents
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn the_plain_install_is_the_controller_its_account_and_its_storage() {
    let documents = manifests(&options(false)).unwrap();
    assert_eq!(
        kinds(&documents),
        [
            "ServiceAccount/tolerant",
            "Role/tolerant",
            "RoleBinding/tolerant",
            "Secret/tolerant-token",
            "PersistentVolumeClaim/tolerant-data",
            "Deployment/tolerant",
            "Service/tolerant"
        ]
    );
    for document in &documents {
        assert_eq!(document["metadata"]["namespace"], "chaos", "{document}");
    }
    let controller = &documents[5]["spec"]["template"]["spec"];
    assert_eq!(controller["serviceAccountName"], "tolerant");
    let container = &controller["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(container["securityContext"]["runAsNonRoot"], true);
    assert!(
        container["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != "TOLERANT_KUBERNETES")
    );
    assert_eq!(documents[6]["spec"]["type"], "ClusterIP");
}

#[test]
fn the_testbed_adds_ten_services_with_the_agent_beside_the_one_named() {
    let mut with_agent = options(true);
    with_agent.agent_in = boutique::ServiceName::Checkout;
    with_agent.checkout_replicas = 3;
    let documents = manifests(&with_agent).unwrap();
    assert_eq!(documents.len(), 7 + 20);
    let deployment = |name: &str| {
        documents
            .iter()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == name)
            .unwrap()
            .clone()
    };
    let checkout = deployment("checkout");
    assert_eq!(checkout["spec"]["replicas"], 3);
    let containers = checkout["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        containers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["checkout", "agent"]
    );
    assert_eq!(
        deployment("payment")["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let peers = containers[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "TOLERANT_PEERS")
        .unwrap()["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        peers.contains("checkout=http://checkout:8081")
            && peers.contains("payment=http://payment:8080"),
        "{peers}"
    );
    // Every container of every pod: non-root, probes, requests and limits.
    for document in documents.iter().filter(|d| d["kind"] == "Deployment") {
        for container in document["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
        {
            assert_eq!(
                container["securityContext"]["runAsNonRoot"], true,
                "{container}"
            );
            assert!(
                container["readinessProbe"].is_object() && container["livenessProbe"].is_object(),
                "{container}"
            );
            assert!(
                container["resources"]["requests"].is_object()
                    && container["resources"]["limits"].is_object()
            );
        }
    }
    let controller_env =
        deployment("tolerant")["spec"]["template"]["spec"]["containers"][0]["env"].clone();
    assert!(
        controller_env
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "TOLERANT_KUBERNETES" && e["value"] == "chaos")
    );
}

#[test]
fn an_external_database_replaces_the_claim() {
    let mut external = options(false);
    external.database_secret = Some("tolerant-postgres".into());
    let documents = manifests(&external).unwrap();
    assert!(
        documents
            .iter()
            .all(|d| d["kind"] != "PersistentVolumeClaim")
    );
    let text = render(&external).unwrap();
    assert!(
        text.contains("tolerant-postgres") && !text.contains("claimName"),
        "{text}"
    );
}

#[test]
fn every_flag_out_of_bounds_is_refused_naming_it() {
    let refused = |change: &dyn Fn(&mut ManifestOptions)| {
        let mut bad = options(true);
        change(&mut bad);
        manifests(&bad).unwrap_err().to_string()
    };
    assert!(refused(&|o| o.namespace = "Chaos".into()).starts_with("--namespace"));
    assert!(refused(&|o| o.namespace = "a".repeat(64)).starts_with("--namespace"));
    assert!(refused(&|o| o.image = "tolerant latest".into()).starts_with("--image"));
    assert!(refused(&|o| o.storage_gib = 0).starts_with("--storage-gib"));
    assert!(refused(&|o| o.storage_gib = 1025).starts_with("--storage-gib"));
    assert!(refused(&|o| o.checkout_replicas = 21).starts_with("--checkout-replicas"));
    assert!(refused(&|o| o.database_secret = Some("-x".into())).starts_with("--database-secret"));
    assert!(refused(&|o| o.token = "short".into()).starts_with("--token"));
    assert!(refused(&|o| o.load_workers = 1001).starts_with("--load-workers"));
    assert!(refused(&|o| o.load_worker_capacity = 0).starts_with("--load-worker-capacity"));
    assert!(refused(&|o| o.load_worker_capacity = 100_001).starts_with("--load-worker-capacity"));
}

#[test]
fn load_workers_are_a_deployment_without_api_access_reaching_the_controllers_workers_port() {
    let mut with_workers = options(false);
    with_workers.load_workers = 4;
    with_workers.load_worker_capacity = 5_000;
    let documents = manifests(&with_workers).unwrap();
    assert_eq!(
        kinds(&documents).last().map(String::as_str),
        Some("Deployment/tolerant-load-worker")
    );
    let workers = documents.last().unwrap();
    assert_eq!(workers["spec"]["replicas"], 4);
    let pod = &workers["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert!(pod["serviceAccountName"].is_null(), "{pod}");
    let container = &pod["containers"][0];
    let args: Vec<&str> = (container["args"].as_array().unwrap().iter())
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "load-worker",
            "--controller",
            "ws://tolerant.chaos.svc:7070/workers",
            "--capacity",
            "5000",
            "--wait",
            "1h",
            "--health",
            "0.0.0.0:8080"
        ]
    );
    let token = (container["env"].as_array().unwrap().iter())
        .find(|e| e["name"] == "TOLERANT_TOKEN")
        .unwrap();
    assert_eq!(token["valueFrom"]["secretKeyRef"]["name"], "tolerant-token");
    let security = &container["securityContext"];
    assert_eq!(
        (
            &security["runAsNonRoot"],
            &security["readOnlyRootFilesystem"]
        ),
        (&true.into(), &true.into())
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/_healthz");
    assert_eq!(container["livenessProbe"]["httpGet"]["port"], 8080);
    assert!(container["resources"]["limits"]["memory"].is_string());
    // The controller's Service and container name the port the spec's `workers_listen` must use.
    let service = documents
        .iter()
        .find(|d| d["kind"] == "Service" && d["metadata"]["name"] == "tolerant")
        .unwrap();
    assert!(
        (service["spec"]["ports"].as_array().unwrap().iter())
            .any(|p| p["name"] == "workers" && p["port"] == 7070 && p["targetPort"] == 7070),
        "{service}"
    );
    let controller = documents
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "tolerant")
        .unwrap();
    assert!(
        (controller["spec"]["template"]["spec"]["containers"][0]["ports"]
            .as_array()
            .unwrap()
            .iter())
        .any(|p| p["name"] == "workers" && p["containerPort"] == 7070)
    );
    // Without --load-workers: no worker, no workers port.
    let plain = render(&options(false)).unwrap();
    assert!(
        !plain.contains("load-worker") && !plain.contains("7070"),
        "{plain}"
    );
}

#[test]
fn the_yaml_reads_back_as_the_documents() {
    let text = render(&options(true)).unwrap();
    let read: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
    assert_eq!(read, manifests(&options(true)).unwrap());
}
