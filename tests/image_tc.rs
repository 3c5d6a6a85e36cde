//! The image's `tc` works for the user the containers run as: a Kubernetes exec runs as the container's user
//! (65534 in `scripts/images`' image), not as root like the engine exec of the compose path, so the network
//! faults work on a cluster only when the image's `tc` carries the file capability `cap_net_admin+ep`. A
//! container of the built image, run as its own user with NET_ADMIN added, changes its queueing discipline with
//! that `tc` (a `pfifo`: `netem` itself is missing from some kernels, this machine's among them); without
//! NET_ADMIN in the container the same command is refused, so it is the capability that grants it.
//!
//! Without an engine the test is skipped, unless `CI` is set: then it fails.

use std::process::{Command, Output};

mod common;

use common::compose::{IMAGE, build_image, engine_and_compose};

/// `tc ARGS` in a throwaway container of the image, as the image's own user, with `extra` `docker run` flags.
fn tc_in_container(extra: &[&str], args: &[&str]) -> Output {
    Command::new("docker")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "/usr/sbin/tc",
        ])
        .args(extra)
        .arg(IMAGE)
        .args(args)
        .output()
        .expect("run docker")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn the_images_tc_takes_net_admin_as_the_containers_user() {
    if engine_and_compose().await.is_none() {
        return;
    }
    build_image();
    let user = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Config.User}}", IMAGE])
        .output()
        .expect("docker image inspect");
    assert_eq!(
        String::from_utf8_lossy(&user.stdout).trim(),
        "65534:65534",
        "the image runs as the unprivileged user"
    );

    let replace = ["qdisc", "replace", "dev", "lo", "root", "pfifo"];
    let granted = tc_in_container(&["--cap-add", "NET_ADMIN"], &replace);
    assert!(
        granted.status.success(),
        "tc as 65534 with NET_ADMIN added: {}",
        said(&granted)
    );

    let refused = tc_in_container(&[], &replace);
    assert!(
        !refused.status.success(),
        "without NET_ADMIN in the container the same tc must be refused"
    );
    assert!(
        said(&refused)
            .to_ascii_lowercase()
            .contains("operation not permitted"),
        "{}",
        said(&refused)
    );

    // With no_new_privs (what allowPrivilegeEscalation: false sets) the file capability is ignored: tc starts
    // but the kernel refuses it, the refusal the Kubernetes fault turns into "needs NET_ADMIN … and
    // allowPrivilegeEscalation".
    let no_escalation = tc_in_container(
        &[
            "--cap-add",
            "NET_ADMIN",
            "--security-opt",
            "no-new-privileges",
        ],
        &replace,
    );
    assert!(
        !no_escalation.status.success(),
        "no-new-privileges must ignore the file capability"
    );
}
