//! Foreign breakers' `[[sources]]`: a Prometheus exposition scraped at its interval and read by a
//! [`ScrapedBreakers`], every change published as [`Observation::Foreign`]. The first scrape is the baseline,
//! taken before the scrape counts as followed: a breaker already open (or half-open) then is on the timeline from
//! there. A source that does not answer it (a 503 while it restarts …) does not stop the run: it is blind from
//! the start, and the first scrape that answers is its baseline. A scrape that fails is a gap: the next one
//! compares with the last state seen, and the first failure of each run of them is published as
//! [`Observation::ScrapeFailed`] with its reason (too large, too slow, refused …), which a run stores in its
//! event log. Every scrape's outcome is counted in the source's [`ScrapeTally`] (shared with whoever started
//! it), which says when the source was blind. Every answer is read through the control client's caps
//! ([`crate::testbed::MAX_ANSWER_BYTES`], checked while reading; [`crate::testbed::ADMIN_CALL_TIMEOUT`]).

use std::sync::Arc;

use bytes::Bytes;
use http::Method;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::time::MissedTickBehavior;

use super::Observation;
use crate::clock::now_ms;
use crate::exposition::{Sample, parse_exposition};
use crate::sources::{MAX_BREAKERS_PER_SOURCE, ScrapeTally, ScrapedBreakers};
use crate::spec::ScrapeSpec;
use crate::task::OwnedTask;
use crate::testbed::{AdminClient, AdminError, Credential};

/// A `[[sources]]` entry (its index in the spec) whose baseline scrape cannot be followed.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error(
        "sources[{index}].url: the baseline scrape shows {seen} breakers, more than the {MAX_BREAKERS_PER_SOURCE} one source may have followed"
    )]
    TooManyBreakers { index: usize, seen: usize },
}

/// Takes one scrape: the exposition's samples, or why not.
pub(crate) async fn scrape(client: &AdminClient, url: &str) -> Result<Vec<Sample>, AdminError> {
    let body = client
        .call(Method::GET, url, Credential::Anonymous, None, Bytes::new())
        .await?;
    Ok(parse_exposition(&String::from_utf8_lossy(&body)))
}

/// The wall clock as the foreign events' unsigned milliseconds.
fn now_unsigned() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}

/// Takes the baseline scrape of `source` (spec index `index`), publishes what it shows, then scrapes it at its
/// interval until the returned task is dropped, counting every scrape in `tally`. A baseline that does not
/// answer is counted and published as a failed scrape, not an error: the first later scrape that answers is the
/// baseline. Foreign services never see the testbed's token.
pub(super) async fn start(
    index: usize,
    source: &ScrapeSpec,
    sender: broadcast::Sender<Observation>,
    tally: Arc<Mutex<ScrapeTally>>,
) -> Result<OwnedTask<()>, ScrapeError> {
    let client = AdminClient::without_token();
    let ScrapeSpec {
        url,
        interval,
        service,
        mapping,
    } = source.clone();
    let source_name = source.source_name();
    let mut breakers = ScrapedBreakers::new(mapping, service, source_name.clone());
    let publish = move |observation: Observation| {
        let _ = sender.send(observation);
    };
    let failed = move |error: String| Observation::ScrapeFailed {
        source: source_name.clone(),
        error,
        at_ms: now_ms(),
    };
    let mut failing = false;
    match scrape(&client, &url).await {
        Ok(baseline) => {
            tally.lock().answered(now_ms());
            let events = breakers.observe(&baseline, now_unsigned());
            if breakers.ignored() > 0 {
                return Err(ScrapeError::TooManyBreakers {
                    index,
                    seen: MAX_BREAKERS_PER_SOURCE + breakers.ignored(),
                });
            }
            for event in events {
                publish(Observation::Foreign(event));
            }
        }
        Err(error) => {
            tally.lock().failed(now_ms());
            failing = true;
            publish(failed(format!("no baseline scrape: {error}")));
        }
    }
    Ok(OwnedTask::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        ticks.tick().await;
        let mut over_cap = false;
        loop {
            ticks.tick().await;
            let scraped = scrape(&client, &url).await;
            match &scraped {
                Ok(_) => tally.lock().answered(now_ms()),
                Err(_) => tally.lock().failed(now_ms()),
            }
            match scraped {
                Ok(samples) => {
                    failing = false;
                    for event in breakers.observe(&samples, now_unsigned()) {
                        publish(Observation::Foreign(event));
                    }
                    let ignored = breakers.ignored() > 0;
                    if ignored && !over_cap {
                        publish(failed(format!(
                            "{} breakers beyond the {MAX_BREAKERS_PER_SOURCE} followed per source left out",
                            breakers.ignored()
                        )));
                    }
                    over_cap = ignored;
                }
                Err(error) if !failing => {
                    failing = true;
                    publish(failed(error.to_string()));
                }
                Err(_) => {}
            }
        }
    }))
}
