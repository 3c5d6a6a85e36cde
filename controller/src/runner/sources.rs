//! Foreign breakers during a run: every `[[sources]]` Prometheus exposition scraped at its interval and read by
//! an [`Observer`], and every event pushed to the [`PushInbox`] while the run lasts, collected as transitions
//! (and copied to a live sink for the dashboard).

use std::sync::Arc;

use breaker::TransitionEvent;
use bytes::Bytes;
use http::Method;
use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::MissedTickBehavior;

use super::admin::{AdminClient, AdminError};
use super::setup_error::SetupError;
use super::task::RunTask;
use crate::clock::now_ms;
use crate::sources::{Observer, PushInbox, parse_exposition};
use crate::spec::{ScrapeSpec, SourceSpec};
use crate::store::TransitionRecord;

/// Where a copy of every foreign transition goes as it is seen (the live dashboard).
pub type TransitionSink = UnboundedSender<TransitionEvent>;

/// The transitions of foreign breakers seen during one run; stop it with [`SourceCollector::finish`].
pub struct SourceCollector {
    events: Arc<Mutex<Vec<TransitionRecord>>>,
    tasks: Vec<RunTask<()>>,
}

/// Takes one scrape: the exposition's samples, or why not.
async fn scrape(
    client: &AdminClient,
    url: &str,
) -> Result<Vec<crate::sources::Sample>, AdminError> {
    let body = client.call(Method::GET, url, None, Bytes::new()).await?;
    Ok(parse_exposition(&String::from_utf8_lossy(&body)))
}

impl SourceCollector {
    /// Scrapes every Prometheus source once for its baseline (an error names the source as the spec does), then
    /// keeps scraping each at its interval; takes pushed events from `inbox` when there is one.
    pub async fn start(
        sources: &[SourceSpec],
        inbox: Option<&PushInbox>,
        live: Option<TransitionSink>,
    ) -> Result<Self, SetupError> {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let client = AdminClient::without_token();
        let keep = {
            let events = Arc::clone(&events);
            move |event: TransitionEvent| {
                if let Some(live) = &live {
                    let _ = live.send(event.clone());
                }
                events.lock().push(TransitionRecord::from_event(&event));
            }
        };
        for (index, source) in sources.iter().enumerate() {
            let SourceSpec::Prometheus(scrape_spec) = source else {
                continue;
            };
            let ScrapeSpec {
                url,
                interval,
                service,
                mapping,
            } = scrape_spec.clone();
            let mut observer = Observer::new(mapping, service, scrape_spec.source_name());
            let baseline = scrape(&client, &url)
                .await
                .map_err(|source| SetupError::NoBaseline { index, source })?;
            let (client, keep) = (client.clone(), keep.clone());
            // A breaker already open (or half-open) at the baseline is on the timeline from here.
            for event in observer.observe(&baseline, now_ms().max(0) as u64) {
                keep(event);
            }
            tasks.push(RunTask::spawn(async move {
                let mut ticks = tokio::time::interval(interval);
                ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    // A failed scrape is a gap: the next one compares with the last state seen.
                    if let Ok(samples) = scrape(&client, &url).await {
                        for event in observer.observe(&samples, now_ms().max(0) as u64) {
                            keep(event);
                        }
                    }
                }
            }));
        }
        if let Some(inbox) = inbox {
            let mut pushed = inbox.subscribe();
            let keep = keep.clone();
            tasks.push(RunTask::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match pushed.recv().await {
                        Ok(event) => keep(event),
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    }
                }
            }));
        }
        Ok(SourceCollector { events, tasks })
    }

    /// Stops scraping and listening; every foreign transition seen, in time order, and the message of
    /// every task that had panicked.
    pub async fn finish(self) -> (Vec<TransitionRecord>, Vec<String>) {
        let mut panics = Vec::new();
        for task in self.tasks {
            panics.extend(task.stop().await);
        }
        let mut events = std::mem::take(&mut *self.events.lock());
        events.sort_by_key(|event| (event.at_ms, event.seq));
        (events, panics)
    }
}
