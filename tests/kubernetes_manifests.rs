//! The printed manifests against the published schemas of three supported Kubernetes minor versions, plain and
//! with `--testbed` (and `--load-workers`): `kubernetes-validate --strict` (PyPI, pinned, installed by
//! `scripts/test` into a venv and named by `TOLERANT_KUBERNETES_VALIDATE`) must accept every document, and
//! refuses unknown fields. Without the validator the test is skipped, unless `CI` is set: then it fails. And
//! every flag out of its bounds is an error naming the flag, before anything is printed.

use std::path::Path;
use std::process::Command;

mod common;
use common::{text, tolerant};
use controller::test_support::TempStore;

/// The minor versions validated against: the oldest k8s-openapi feature Tolerant builds with, and two later.
const VERSIONS: [&str; 3] = ["1.33.0", "1.35.0", "1.37.0"];

fn validator() -> Option<String> {
    match std::env::var("TOLERANT_KUBERNETES_VALIDATE") {
        Ok(path) if Path::new(&path).exists() => Some(path),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and TOLERANT_KUBERNETES_VALIDATE names no kubernetes-validate (scripts/test installs it)"
            );
            eprintln!(
                "skipped: TOLERANT_KUBERNETES_VALIDATE is not set (run through scripts/test)"
            );
            None
        }
    }
}

fn manifests(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["kubernetes", "manifests", "--token", "0123456789abcdef0123"];
    all.extend_from_slice(args);
    let printed = tolerant(&all, dir);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    text(&printed.stdout)
}

#[test]
fn the_manifests_validate_against_three_kubernetes_versions() {
    let Some(validator) = validator() else {
        return;
    };
    let dir = TempStore::new("kubernetes-manifests");
    let outputs = [
        ("plain.yaml", manifests(dir.dir(), &[])),
        (
            "testbed.yaml",
            manifests(
                dir.dir(),
                &[
                    "--namespace",
                    "game-day",
                    "--testbed",
                    "--checkout-replicas",
                    "3",
                    "--load-workers",
                    "3",
                ],
            ),
        ),
        (
            "postgres.yaml",
            manifests(
                dir.dir(),
                &[
                    "--database-secret",
                    "tolerant-postgres",
                    "--testbed",
                    "--agent-in",
                    "checkout",
                ],
            ),
        ),
    ];
    for (file, yaml) in &outputs {
        assert!(
            yaml.contains("kind: Role\n") && yaml.contains("kind: Deployment\n"),
            "{yaml}"
        );
        std::fs::write(dir.dir().join(file), yaml).expect("write the manifests");
        if *file == "testbed.yaml" {
            // The load workers' own document (checkout's Deployment has 3 replicas too).
            let workers = yaml
                .split("\n---\n")
                .find(|d| {
                    d.contains("kind: Deployment\n") && d.contains("  name: tolerant-load-worker\n")
                })
                .unwrap_or_else(|| panic!("no load worker Deployment: {yaml}"));
            for line in [
                "  replicas: 3\n",
                "        - load-worker\n",
                "        - ws://tolerant.game-day.svc:7070/workers\n",
                "              name: tolerant-token\n",
                "          runAsNonRoot: true\n",
                "        readinessProbe:\n",
                "        livenessProbe:\n",
                "        resources:\n",
            ] {
                assert!(workers.contains(line), "{line:?} in {workers}");
            }
        }
        for version in VERSIONS {
            let checked = Command::new(&validator)
                .args(["--strict", "--kubernetes-version", version])
                .arg(dir.dir().join(file))
                .output()
                .expect("run kubernetes-validate");
            let said = format!("{}{}", text(&checked.stdout), text(&checked.stderr));
            assert!(
                checked.status.success(),
                "{file} against {version}:\n{said}"
            );
            assert!(
                !said.contains("ERROR") && !said.contains("WARN"),
                "{file} against {version}:\n{said}"
            );
        }
    }
    // The check can fail: a field the schema does not have is refused.
    let broken = outputs[0].1.replacen(
        "kind: ServiceAccount",
        "kind: ServiceAccount\nbogusField: 1",
        1,
    );
    std::fs::write(dir.dir().join("broken.yaml"), broken).expect("write");
    let refused = Command::new(&validator)
        .args(["--strict", "--kubernetes-version", VERSIONS[0]])
        .arg(dir.dir().join("broken.yaml"))
        .output()
        .expect("run kubernetes-validate");
    assert!(!refused.status.success(), "an unknown field passed");
}

#[test]
fn a_flag_out_of_bounds_is_refused_naming_it() {
    let dir = TempStore::new("kubernetes-flags");
    for (args, flag) in [
        (&["--namespace", "Not_A_Label"][..], "--namespace"),
        (&["--checkout-replicas", "0"][..], "--checkout-replicas"),
        (&["--storage-gib", "5000"][..], "--storage-gib"),
        (&["--storage-gib", "0"][..], "--storage-gib"),
        (&["--checkout-replicas", "21"][..], "--checkout-replicas"),
        (&["--image", "tolerant latest"][..], "--image"),
        (
            &["--database-secret", "Not_A_Label"][..],
            "--database-secret",
        ),
        (&["--agent-in", "database"][..], "--agent-in"),
        (&["--token", "short"][..], "--token"),
        (&["--load-workers", "1001"][..], "--load-workers"),
        (
            &["--load-worker-capacity", "0"][..],
            "--load-worker-capacity",
        ),
    ] {
        let mut all = vec!["kubernetes", "manifests"];
        all.extend_from_slice(args);
        let refused = tolerant(&all, dir.dir());
        assert!(!refused.status.success(), "{args:?} was taken");
        assert!(refused.stdout.is_empty(), "{args:?} printed manifests");
        assert!(
            text(&refused.stderr).contains(flag),
            "{args:?}: {}",
            text(&refused.stderr)
        );
    }
}

/// A spec a run against a namespace takes.
const POD_SPEC: &str = "name = \"pods\"\nduration = \"5s\"\n[load]\nusers = 2\n[fault]\ntarget = \"checkout\"\n\
     kind = \"restart\"\nrates = [1.0]\n[breaker]\nmodes = [\"enforce\"]\n";

/// `tolerant ARGS` in `dir` with no cluster configuration anywhere (`kubeconfig`, when given, is the only one)
/// and a token, to its end; a child still running after a minute is killed and fails the test.
#[allow(clippy::disallowed_methods)] // bounds a real child process: wall time is what it measures
fn without_cluster(
    dir: &Path,
    args: &[&str],
    kubeconfig: Option<&Path>,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut command = Command::new(common::BIN);
    command
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env(
            "KUBECONFIG",
            kubeconfig.map_or_else(|| dir.join("no-such-kubeconfig"), Path::to_path_buf),
        )
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("TOLERANT_TARGETS")
        .env_remove("TOLERANT_COMPOSE")
        .env_remove("TOLERANT_SWARM")
        .env("TOLERANT_TOKEN", "0123456789abcdef")
        .env("TOLERANT_DB", dir.join("pods.db"))
        .env("TOLERANT_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = common::Running(command.spawn().expect("run tolerant"));
    let started = std::time::Instant::now();
    loop {
        if child.0.try_wait().expect("wait for tolerant").is_some() {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "tolerant {args:?} did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut output = std::process::Output {
        status: child.0.wait().expect("wait"),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    use std::io::Read;
    if let Some(mut out) = child.0.stdout.take() {
        out.read_to_end(&mut output.stdout).expect("read stdout");
    }
    if let Some(mut err) = child.0.stderr.take() {
        err.read_to_end(&mut output.stderr).expect("read stderr");
    }
    output
}

/// No cluster reachable: `run --kubernetes` says what it tried (the kubeconfig, then the in-cluster service
/// account); nothing else of Tolerant needs a cluster.
#[test]
fn without_a_cluster_a_run_says_what_it_tried() {
    let dir = TempStore::new("kubernetes-none");
    std::fs::write(dir.dir().join("spec.toml"), POD_SPEC).expect("write the spec");
    let output = without_cluster(
        dir.dir(),
        &["run", "spec.toml", "--kubernetes", "shop"],
        None,
        &[],
    );
    assert!(!output.status.success());
    let said = text(&output.stderr);
    assert!(said.contains("no cluster configuration found"), "{said}");
    assert!(
        said.contains("kubeconfig") && said.contains("in-cluster"),
        "{said}"
    );
}

/// A kubeconfig from outside is read, and the API server it names not answering is an error naming that server.
#[test]
fn a_kubeconfigs_server_that_does_not_answer_is_named() {
    let dir = TempStore::new("kubernetes-unreachable");
    std::fs::write(dir.dir().join("spec.toml"), POD_SPEC).expect("write the spec");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let kubeconfig = dir.dir().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: here\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             users:\n- name: me\n  user:\n    token: not-a-real-token\ncontexts:\n- name: here\n  context:\n    \
             cluster: here\n    user: me\n    namespace: shop\ncurrent-context: here\n"
        ),
    )
    .expect("write the kubeconfig");
    let output = without_cluster(
        dir.dir(),
        &["run", "spec.toml", "--kubernetes", "shop"],
        Some(&kubeconfig),
        &[],
    );
    assert!(!output.status.success());
    let said = text(&output.stderr);
    assert!(
        said.contains(&format!(
            "Kubernetes API server http://127.0.0.1:{port}/: not reachable"
        )),
        "{said}"
    );
    assert!(said.contains("listing pods of namespace shop"), "{said}");
}

/// The dashboard with `TOLERANT_KUBERNETES`: no cluster is the same clear error, naming the variable, and the
/// dashboard does not start; another source of targets beside it is refused naming both.
#[test]
fn the_dashboard_on_a_namespace_without_a_cluster_says_what_it_tried() {
    let dir = TempStore::new("kubernetes-dashboard");
    let output = without_cluster(dir.dir(), &[], None, &[("TOLERANT_KUBERNETES", "shop")]);
    assert!(!output.status.success());
    let said = text(&output.stderr);
    assert!(
        said.contains("TOLERANT_KUBERNETES=shop")
            && said.contains("no cluster configuration found"),
        "{said}"
    );
    assert!(!text(&output.stdout).contains("Tolerant dashboard:"));
    let both = without_cluster(
        dir.dir(),
        &[],
        None,
        &[("TOLERANT_KUBERNETES", "shop"), ("TOLERANT_SWARM", "shop")],
    );
    assert!(!both.status.success());
    let said = text(&both.stderr);
    assert!(
        said.contains("TOLERANT_KUBERNETES and TOLERANT_SWARM: set one of them"),
        "{said}"
    );
}
