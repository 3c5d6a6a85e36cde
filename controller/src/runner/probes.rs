//! At a run's end, before the next run's reset: the agents' half-open probes over the run in 10 ms buckets
//! (`GET /_agent/probes`, through the admin client with its size and time caps), summed over the agents, kept as
//! the run's `probes:buckets` event — what `probes_peak_per_10ms` and `probes_peak_per_s_exact` are computed from.

use crate::stats::probes::sum_over_agents;
use crate::store::{ProbeBucketsRead, RunEvent, RunEventRecord};
use crate::testbed::AdminClient;

/// The `probes:buckets` event of a run over `[since_ms, until_ms)`: the buckets of every agent in `agents` that
/// answered, summed; why the others did not. An agent that never answered leaves its URL out of `agents`.
pub(super) async fn probe_buckets_event(
    admin: &AdminClient,
    agents: &[&str],
    since_ms: i64,
    until_ms: i64,
) -> RunEventRecord {
    let mut answered = Vec::new();
    let mut errors = Vec::new();
    let mut answers = Vec::new();
    for agent in agents {
        let window = (since_ms.max(0) as u64, until_ms.max(0) as u64);
        match admin.probe_buckets(agent, window.0, window.1).await {
            Ok(answer) => {
                answered.push((*agent).to_owned());
                let buckets: Vec<(i64, u64)> = answer
                    .buckets
                    .into_iter()
                    .filter_map(|(start_ms, count)| Some((i64::try_from(start_ms).ok()?, count)))
                    .collect();
                answers.push(buckets);
            }
            Err(error) => errors.push(error.to_string()),
        }
    }
    RunEventRecord {
        at_ms: until_ms,
        fault_id: String::new(),
        event: RunEvent::ProbeBuckets(ProbeBucketsRead {
            agents: answered,
            errors,
            since_ms,
            until_ms,
            bucket_ms: agent::probes::PROBE_BUCKET_MS,
            buckets: sum_over_agents(answers.iter().map(Vec::as_slice)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::probes::{peak_per_bucket, peak_per_second};

    /// An agent's control API on a loopback port, with probes recorded at the given instants.
    async fn agent_with_probes(at_ms: &[u64]) -> String {
        let agent = agent::Agent::new(agent::AgentConfig::default());
        for &at in at_ms {
            agent.record_probe_at(at);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, agent::fault_api::router(agent))
                .await
                .unwrap()
        });
        url
    }

    #[tokio::test]
    async fn the_agents_buckets_are_summed_and_a_silent_agent_is_named() {
        let start = 1_700_000_000_000;
        let one = agent_with_probes(&[start + 5, start + 7, start + 400, start + 3_000]).await;
        let two = agent_with_probes(&[start + 1, start + 1_390, start + 9_000]).await;
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", listener.local_addr().unwrap())
        };
        let admin = AdminClient::without_token();
        let agents = [one.as_str(), two.as_str(), dead.as_str()];
        let record = probe_buckets_event(&admin, &agents, start as i64, start as i64 + 5_000).await;
        let RunEvent::ProbeBuckets(read) = record.event else {
            panic!("{record:?}");
        };
        assert_eq!(read.agents, [one, two]);
        assert_eq!(read.errors.len(), 1, "{:?}", read.errors);
        assert!(read.errors[0].contains(&dead), "{:?}", read.errors);
        let start = start as i64;
        // The one after the window (9 s) is not asked for.
        assert_eq!(
            read.buckets,
            [
                (start, 3),
                (start + 400, 1),
                (start + 1_390, 1),
                (start + 3_000, 1)
            ]
        );
        assert_eq!(peak_per_bucket(&read.buckets, start, start + 5_000), 3);
        // 0 .. 1 s holds 3 + 1; 0.4 s .. 1.4 s holds 1 + 1: the peak second is 4.
        assert_eq!(peak_per_second(&read.buckets, start, start + 5_000), 4);
    }
}
