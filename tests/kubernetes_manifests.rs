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

/// No cluster reachable: `run --kubernetes` says what it tried (the kubeconfig, then the in-cluster service
/// account); nothing else of Tolerant needs a cluster.
#[test]
fn without_a_cluster_a_run_says_what_it_tried() {
    let dir = TempStore::new("kubernetes-none");
    std::fs::write(
        dir.dir().join("spec.toml"),
        "name = \"pods\"\nduration = \"5s\"\n[load]\nusers = 2\n[fault]\ntarget = \"checkout\"\n\
         kind = \"restart\"\nrates = [1.0]\n[breaker]\nmodes = [\"enforce\"]\n",
    )
    .expect("write the spec");
    let output = Command::new(common::BIN)
        .args([
            "run",
            "spec.toml",
            "--db",
            "pods.db",
            "--kubernetes",
            "shop",
        ])
        .current_dir(dir.dir())
        .env("HOME", dir.dir())
        .env("KUBECONFIG", dir.dir().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("TOLERANT_TOKEN", "0123456789abcdef")
        .env_remove("TOLERANT_DB")
        .output()
        .expect("run tolerant");
    assert!(!output.status.success());
    let said = text(&output.stderr);
    assert!(said.contains("no cluster configuration found"), "{said}");
    assert!(
        said.contains("kubeconfig") && said.contains("in-cluster"),
        "{said}"
    );
}
