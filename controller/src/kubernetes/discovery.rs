//! The testbed's pods, found by label (`app.kubernetes.io/name` names each pod's service; a selector narrows
//! which pods count) and watched, not polled: kube's watcher lists them once, then follows the API server's
//! watch (re-listing when the server says the watch is too old), and every ready pod is a replica in a
//! [`Roster`], so a pod that is replaced during a run is followed under the label the one it replaced had.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::Cluster;
use super::error::KubeError;
use super::labels::NAME_LABEL;
use crate::roster::{Instance, ReplicaChange, Roster};

/// Whether a pod serves: running, its `Ready` condition true, not being deleted, with an address.
pub fn is_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let ready = status.conditions.as_ref().is_some_and(|conditions| {
        conditions
            .iter()
            .any(|condition| condition.type_ == "Ready" && condition.status == "True")
    });
    ready
        && status.phase.as_deref() == Some("Running")
        && status.pod_ip.is_some()
        && pod.metadata.deletion_timestamp.is_none()
}

/// The ready pods among `pods` as roster instances: service from [`NAME_LABEL`], the pod's uid, its name, its
/// IP at `port`.
pub fn instances<'a>(pods: impl IntoIterator<Item = &'a Pod>, port: u16) -> Vec<Instance> {
    pods.into_iter()
        .filter(|pod| is_ready(pod))
        .filter_map(|pod| {
            let service = pod.metadata.labels.as_ref()?.get(NAME_LABEL)?.clone();
            let ip: std::net::IpAddr = pod.status.as_ref()?.pod_ip.as_ref()?.parse().ok()?;
            Some(Instance {
                service,
                id: pod.metadata.uid.clone()?,
                name: pod.metadata.name.clone()?,
                url: format!("http://{}", std::net::SocketAddr::new(ip, port)),
                slot: None,
            })
        })
        .collect()
}

impl Cluster {
    /// Every pod of the namespace that `selector` matches (ready or not).
    pub async fn pods_matching(&self, selector: &str) -> Result<Vec<Pod>, KubeError> {
        let params = ListParams::default().labels(selector);
        let listed = self
            .call("list", &format!("-l {selector}"), self.pods().list(&params))
            .await?;
        Ok(listed.items)
    }

    /// Follows the pods `selector` matches, keeps `roster` (which holds the replicas the testbed was built from)
    /// up to date and sends every change on `changes`, until the returned future is dropped. A watch error is
    /// logged; the watcher backs off and lists again.
    pub async fn watch(
        &self,
        selector: &str,
        port: u16,
        roster: Arc<Mutex<Roster>>,
        changes: broadcast::Sender<ReplicaChange>,
    ) {
        let config = watcher::Config::default().labels(selector);
        let events = watcher(self.pods(), config)
            .default_backoff()
            .map_err(|error| tracing::warn!(%error, "pod watch"));
        let mut events = std::pin::pin!(events);
        let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
        let mut listing: Option<BTreeMap<String, Pod>> = None;
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            match event {
                watcher::Event::Init => listing = Some(BTreeMap::new()),
                watcher::Event::InitApply(pod) => {
                    if let (Some(listing), Some(uid)) = (listing.as_mut(), pod.metadata.uid.clone())
                    {
                        listing.insert(uid, pod);
                    }
                }
                watcher::Event::InitDone => pods = listing.take().unwrap_or_default(),
                watcher::Event::Apply(pod) => {
                    if let Some(uid) = pod.metadata.uid.clone() {
                        pods.insert(uid, pod);
                    }
                }
                watcher::Event::Delete(pod) => {
                    if let Some(uid) = &pod.metadata.uid {
                        pods.remove(uid);
                    }
                }
            }
            if listing.is_some() {
                continue;
            }
            crate::roster::publish(&roster, &instances(pods.values(), port), &changes, "pod");
        }
    }
}
