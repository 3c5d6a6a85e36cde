//! Pod faults under leases, with the container faults' semantics: undone when the lease runs out, on abort,
//! on halt and Ctrl-C, and by any controller that starts and finds an expired one.
//!
//! | action | applied as | undone by |
//! |---|---|---|
//! | `delete` (a spec's `restart`) | the pod deleted (its Deployment starts a new one) | nothing: the new pod is the undo |
//! | `kill` | `kill -s SIGNAL 1` run in the container (exec) | nothing: the kubelet restarts the container |
//! | `net_delay` | `tc qdisc replace dev eth0 root netem delay …` (exec) | `tc qdisc del dev eth0 root` |
//! | `net_loss` | `tc qdisc replace dev eth0 root netem loss …` (exec) | `tc qdisc del dev eth0 root` |
//!
//! Where the lease lives: on the pod, as the annotation [`FAULT_ANNOTATION`] holding who applied the fault, until
//! when and what it is (a JSON [`PodLease`]), written *before* the fault is applied; a renewal rewrites it, an
//! undo removes it. A controller that was killed stops renewing, and the next one to start (or any other
//! running one, once a second) sweeps: every pod of the namespace whose annotation has expired is undone. Recording
//! first means a crash between the two steps leaves at worst an annotation whose undo finds nothing to undo.
//!
//! What a pod needs: `kill` is sent from inside the container to its PID 1, which the kernel lets die only of
//! signals it handles (SIGKILL from inside is ignored): Tolerant's services stop on SIGTERM and SIGINT, so
//! SIGKILL is refused here naming that. `tc` needs the NET_ADMIN capability in the container (the testbed
//! manifests add it); a refusal names what is missing.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{AttachParams, DeleteParams, ListParams, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

use super::Cluster;
use super::error::KubeError;
use super::labels::FAULT_ANNOTATION;
use crate::actions::ContainerAction;
pub use crate::actions::PodAction;
use crate::docker::lease::checked_lease_ms;

/// The interface a pod's network faults shape (every pod network gives a pod `eth0`).
pub const POD_INTERFACE: &str = "eth0";
/// Signals a pod's `kill` may send: those a service's PID 1 handles.
pub const POD_SIGNALS: &[&str] = &["SIGTERM", "SIGINT"];
/// Most of an exec's output read (the rest is cut).
const MAX_EXEC_OUTPUT: usize = 16 * 1024;
/// Longest an exec may take.
const EXEC_TIMEOUT: Duration = Duration::from_secs(30);

impl PodAction {
    /// The pod fault a container fault is on Kubernetes: `restart` deletes the pod, `kill`, `net_delay` and
    /// `net_loss` are themselves; `pause`, `stop` and `disconnect` have no pod equivalent and are refused
    /// naming `field`.
    pub fn of_container(field: &str, action: &ContainerAction) -> Result<PodAction, KubeError> {
        let refused = |message: String| KubeError::Invalid {
            field: field.to_owned(),
            message,
        };
        match action {
            ContainerAction::Restart => Ok(PodAction::Delete),
            ContainerAction::Kill { signal } if POD_SIGNALS.contains(&signal.as_str()) => {
                Ok(PodAction::Kill {
                    signal: signal.clone(),
                })
            }
            ContainerAction::Kill { signal } => Err(refused(format!(
                "a pod's PID 1 ignores {signal} sent from inside its container: use one of {} (or \
                 `restart`, which deletes the pod)",
                POD_SIGNALS.join(", ")
            ))),
            ContainerAction::NetDelay { delay_ms } => Ok(PodAction::NetDelay {
                delay_ms: *delay_ms,
            }),
            ContainerAction::NetLoss { percent } => Ok(PodAction::NetLoss { percent: *percent }),
            other => Err(refused(format!(
                "`{}` has no pod equivalent on Kubernetes: use restart (the pod deleted), kill, net_delay \
                 or net_loss",
                other.name()
            ))),
        }
    }

    /// The command run in the container, if the action is an exec.
    pub fn command(&self) -> Option<Vec<String>> {
        let netem = match self {
            PodAction::Delete => return None,
            PodAction::Kill { signal } => {
                return Some(["kill", "-s", signal, "1"].map(str::to_owned).to_vec());
            }
            PodAction::NetDelay { delay_ms } => {
                crate::docker::netem::netem_args(Some(Duration::from_millis(*delay_ms)), None)
            }
            PodAction::NetLoss { percent } => {
                crate::docker::netem::netem_args(None, Some(*percent))
            }
        };
        let mut command: Vec<String> = ["tc", "qdisc", "replace", "dev", POD_INTERFACE, "root"]
            .map(str::to_owned)
            .to_vec();
        command.extend(netem);
        Some(command)
    }

    /// The command that undoes it, if one does.
    pub fn undo_command(&self) -> Option<Vec<String>> {
        match self {
            PodAction::NetDelay { .. } | PodAction::NetLoss { .. } => Some(
                ["tc", "qdisc", "del", "dev", POD_INTERFACE, "root"]
                    .map(str::to_owned)
                    .to_vec(),
            ),
            PodAction::Delete | PodAction::Kill { .. } => None,
        }
    }
}

/// A pod fault's lease, as its annotation holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodLease {
    /// Which controller applied it (`host/pid/random`).
    pub owner: String,
    /// When it ends, in ms since the epoch.
    pub until_ms: i64,
    /// The container it acts in.
    pub container: String,
    pub action: PodAction,
}

impl PodLease {
    /// The lease an annotation holds, if it holds one.
    pub fn of_pod(pod: &Pod) -> Option<PodLease> {
        let text = pod.metadata.annotations.as_ref()?.get(FAULT_ANNOTATION)?;
        serde_json::from_str(text).ok()
    }
}

/// The merge patch that sets (or, with `None`, removes) the fault annotation.
pub fn annotation_patch(lease: Option<&PodLease>) -> serde_json::Value {
    let value = match lease {
        Some(lease) => serde_json::Value::String(
            serde_json::to_string(lease).unwrap_or_else(|_| String::from("{}")),
        ),
        None => serde_json::Value::Null,
    };
    serde_json::json!({ "metadata": { "annotations": { FAULT_ANNOTATION: value } } })
}

/// Checks a lease's length against the container faults' bounds; the error names `lease`.
pub fn lease_ms(lease: Duration) -> Result<i64, KubeError> {
    checked_lease_ms(lease).map_err(|message| KubeError::Invalid {
        field: "lease".into(),
        message,
    })
}

/// What an exec's failure says, as an error naming the pod and what is missing when that can be told.
pub fn exec_refused(pod: &str, command: &[String], output: &str) -> KubeError {
    let program = command.first().map(String::as_str).unwrap_or("");
    let message = if output.contains("executable file not found") || output.contains("no such file")
    {
        format!("its image has no `{program}` (rebuild it with `bash scripts/images`)")
    } else if program == "tc"
        && output
            .to_ascii_lowercase()
            .contains("operation not permitted")
    {
        // tc's "RTNETLINK answers: Operation not permitted", or the runtime's "exec /usr/sbin/tc: operation not
        // permitted" when the pod's bounding set lacks the capability tc's file capability asks for.
        "network faults need NET_ADMIN in the container: securityContext.capabilities.add: [NET_ADMIN] (the \
         testbed manifests add it), and for a non-root container a `tc` with the file capability \
         cap_net_admin+ep and allowPrivilegeEscalation"
            .to_owned()
    } else if program == "tc" && output.contains("qdisc kind is unknown") {
        "the node's kernel has no `netem` queueing discipline (sch_netem)".to_owned()
    } else {
        format!("`{}` failed: {}", command.join(" "), output.trim())
    };
    KubeError::Unsupported {
        pod: pod.to_owned(),
        message,
    }
}

impl Cluster {
    /// The pod named `pod`.
    pub async fn pod(&self, pod: &str) -> Result<Pod, KubeError> {
        self.call("get", pod, self.pods().get(pod)).await
    }

    /// Writes (or with `None` removes) the fault annotation of `pod`.
    pub async fn annotate(&self, pod: &str, lease: Option<&PodLease>) -> Result<(), KubeError> {
        let patch = Patch::Merge(annotation_patch(lease));
        let params = PatchParams::default();
        self.call("annotate", pod, self.pods().patch(pod, &params, &patch))
            .await?;
        Ok(())
    }

    /// Runs `command` in `container` of `pod`; an exit other than success is [`exec_refused`].
    pub async fn exec(
        &self,
        pod: &str,
        container: &str,
        command: &[String],
    ) -> Result<(), KubeError> {
        let params = AttachParams {
            container: Some(container.to_owned()),
            stdin: false,
            stdout: true,
            stderr: true,
            tty: false,
            max_stdout_buf_size: Some(MAX_EXEC_OUTPUT),
            max_stderr_buf_size: Some(MAX_EXEC_OUTPUT),
            ..AttachParams::default()
        };
        let run = async {
            let mut attached = self
                .pods()
                .exec(pod, command.to_vec(), &params)
                .await
                .map_err(|source| self.failed("exec in", pod, source))?;
            let mut output = Vec::new();
            for stream in [attached.stdout(), attached.stderr()].into_iter().flatten() {
                let _ = stream
                    .take(MAX_EXEC_OUTPUT as u64)
                    .read_to_end(&mut output)
                    .await;
            }
            let status = match attached.take_status() {
                Some(status) => status.await,
                None => None,
            };
            let output = String::from_utf8_lossy(&output).into_owned();
            match status {
                Some(status) if status.status.as_deref() == Some("Success") => Ok(()),
                Some(status) => Err(exec_refused(
                    pod,
                    command,
                    &format!("{output}{}", status.message.unwrap_or_default()),
                )),
                None => Err(exec_refused(pod, command, &output)),
            }
        };
        tokio::time::timeout(EXEC_TIMEOUT, run)
            .await
            .unwrap_or_else(|_| {
                Err(exec_refused(
                    pod,
                    command,
                    &format!(
                        "no answer within {}",
                        humantime::format_duration(EXEC_TIMEOUT)
                    ),
                ))
            })
    }

    /// Applies `action` to `pod` (in `container`, else its first) for `lease` from `now_ms`, as `owner`: the
    /// annotation first, then the fault. When the fault cannot be applied the annotation is removed again
    /// and the error returned. A pod that has a fault already is refused, naming who holds it.
    pub async fn inject(
        &self,
        pod: &str,
        container: Option<&str>,
        action: &PodAction,
        lease: Duration,
        owner: &str,
        now_ms: i64,
    ) -> Result<PodLease, KubeError> {
        let lease = lease_ms(lease)?;
        let found = self.pod(pod).await?;
        if let Some(held) = PodLease::of_pod(&found).filter(|held| held.until_ms > now_ms) {
            return Err(KubeError::Unsupported {
                pod: pod.to_owned(),
                message: format!(
                    "has a `{}` fault of {} until {} ms already",
                    held.action.name(),
                    held.owner,
                    held.until_ms
                ),
            });
        }
        let first = found
            .spec
            .as_ref()
            .and_then(|spec| spec.containers.first())
            .map(|container| container.name.clone())
            .unwrap_or_default();
        let recorded = PodLease {
            owner: owner.to_owned(),
            until_ms: now_ms.saturating_add(lease),
            container: container.map_or(first, str::to_owned),
            action: action.clone(),
        };
        self.annotate(pod, Some(&recorded)).await?;
        let applied = match action.command() {
            Some(command) => self.exec(pod, &recorded.container, &command).await,
            None => {
                let params = DeleteParams::default();
                self.call("delete", pod, self.pods().delete(pod, &params))
                    .await
                    .map(|_| ())
            }
        };
        if let Err(error) = applied {
            if let Err(cleanup) = self.annotate(pod, None).await {
                tracing::warn!(%cleanup, pod, "removing the annotation of a fault not applied");
            }
            return Err(error);
        }
        tracing::info!(
            pod,
            action = action.name(),
            lease_ms = lease,
            "pod fault applied"
        );
        Ok(recorded)
    }

    /// Moves `lease` on `pod` to end `lease_for` after `now_ms`.
    pub async fn renew(
        &self,
        pod: &str,
        lease: &PodLease,
        lease_for: Duration,
        now_ms: i64,
    ) -> Result<PodLease, KubeError> {
        let renewed = PodLease {
            until_ms: now_ms.saturating_add(lease_ms(lease_for)?),
            ..lease.clone()
        };
        self.annotate(pod, Some(&renewed)).await?;
        Ok(renewed)
    }

    /// Undoes `lease`'s fault on `pod` and removes its annotation. A pod that is gone counts as undone.
    pub async fn undo(&self, pod: &str, lease: &PodLease) -> Result<(), KubeError> {
        let gone = |error: &KubeError| match error {
            KubeError::Api { source, .. } => {
                matches!(source.as_ref(), kube::Error::Api(status) if status.code == 404)
            }
            _ => false,
        };
        if let Some(command) = lease.action.undo_command() {
            match self.exec(pod, &lease.container, &command).await {
                Ok(()) => {}
                Err(KubeError::Unsupported { message, .. })
                    if crate::docker::netem::nothing_to_delete(&message) => {}
                Err(error) if gone(&error) => return Ok(()),
                Err(error) => return Err(error),
            }
        }
        match self.annotate(pod, None).await {
            Err(error) if gone(&error) => Ok(()),
            other => other,
        }
    }

    /// Undoes every fault of the namespace whose lease ended by `now_ms` (every one with `None`: halt),
    /// whoever applied it. Returns the pods undone; a pod whose undo failed is logged and left for the next
    /// sweep.
    pub async fn sweep(&self, now_ms: Option<i64>) -> Result<Vec<String>, KubeError> {
        let params = ListParams::default();
        let pods = self
            .call("list", "(all)", self.pods().list(&params))
            .await?;
        let mut undone = Vec::new();
        for pod in pods.items {
            let (Some(name), Some(lease)) = (pod.metadata.name.clone(), PodLease::of_pod(&pod))
            else {
                continue;
            };
            if now_ms.is_some_and(|now| lease.until_ms > now) {
                continue;
            }
            match self.undo(&name, &lease).await {
                Ok(()) => {
                    tracing::info!(pod = name, owner = lease.owner, "pod fault undone");
                    undone.push(name);
                }
                Err(error) => tracing::warn!(%error, "a pod fault could not be undone"),
            }
        }
        Ok(undone)
    }

    /// Sweeps once a `period` (the first at once) until the handle is aborted.
    pub fn spawn_sweep(&self, period: Duration) -> tokio::task::JoinHandle<()> {
        let cluster = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = cluster.sweep(Some(crate::clock::now_ms())).await {
                    tracing::warn!(%error, "pod fault sweep failed");
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_faults_become_pod_faults_or_are_refused_naming_the_field() {
        let of = |action: ContainerAction| PodAction::of_container("fault.kinds", &action);
        assert_eq!(of(ContainerAction::Restart).unwrap(), PodAction::Delete);
        assert_eq!(
            of(ContainerAction::Kill {
                signal: "SIGTERM".into()
            })
            .unwrap(),
            PodAction::Kill {
                signal: "SIGTERM".into()
            }
        );
        let sigkill = of(ContainerAction::Kill {
            signal: "SIGKILL".into(),
        })
        .unwrap_err()
        .to_string();
        assert!(
            sigkill.starts_with("fault.kinds") && sigkill.contains("PID 1"),
            "{sigkill}"
        );
        let pause = of(ContainerAction::Pause).unwrap_err().to_string();
        assert!(pause.contains("`pause` has no pod equivalent"), "{pause}");
    }

    #[test]
    fn the_commands_are_kill_and_tc_on_eth0() {
        let kill = PodAction::Kill {
            signal: "SIGTERM".into(),
        };
        assert_eq!(kill.command().unwrap(), ["kill", "-s", "SIGTERM", "1"]);
        assert_eq!(kill.undo_command(), None);
        let delay = PodAction::NetDelay { delay_ms: 200 };
        assert_eq!(
            delay.command().unwrap().join(" "),
            "tc qdisc replace dev eth0 root netem delay 200ms"
        );
        assert_eq!(
            delay.undo_command().unwrap().join(" "),
            "tc qdisc del dev eth0 root"
        );
        assert_eq!(
            PodAction::NetLoss { percent: 10.0 }
                .command()
                .unwrap()
                .join(" "),
            "tc qdisc replace dev eth0 root netem loss 10%"
        );
        assert_eq!(PodAction::Delete.command(), None);
    }

    #[test]
    fn what_an_exec_says_is_told_as_what_is_missing() {
        let tc = ["tc".to_owned()];
        let said = |output: &str| exec_refused("checkout-1", &tc, output).to_string();
        assert!(said("RTNETLINK answers: Operation not permitted").contains("NET_ADMIN"));
        assert!(said("exec /usr/sbin/tc: operation not permitted").contains("NET_ADMIN"));
        assert!(said("exec: \"tc\": executable file not found in $PATH").contains("has no `tc`"));
        assert!(said("Error: Specified qdisc kind is unknown.").contains("sch_netem"));
        assert!(said("boom").starts_with("pod checkout-1: `tc` failed: boom"));
    }
}
