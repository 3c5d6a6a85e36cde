//! Reading: experiments, runs and what each run saw. A stored value that does not decode is
//! [`StoreError::Corrupt`], never silently dropped.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{
    CollectorSample, EndpointHistogramRow, EndpointSecondRow, EnergySource, ExperimentId,
    ExperimentRow, RunEvent, RunEventKind, RunEventRecord, RunId, RunRow, STOP_CONDITION_REASON,
    SampleRow, Store, StoreError, StoredLatency, TransitionRecord, columns, status_of, uint,
};
use crate::load::OutcomeCounts;

impl Store {
    /// Plan positions of an experiment that have a finished run (what a resume skips).
    pub async fn finished_plan_indices(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<usize>, StoreError> {
        self.rows_by(
            "SELECT plan_index FROM runs WHERE experiment_id = $1 AND status = 'finished' \
             ORDER BY plan_index",
            experiment.0,
            |row| Ok(uint(row.try_get(0)?) as usize),
        )
        .await
    }

    /// Plan positions of an experiment that have a terminal run — finished, or aborted by its stop
    /// condition (a verdict, see [`STOP_CONDITION_REASON`]) — in plan order: what a resume skips.
    /// Interrupted attempts and runs aborted for any other reason do not count.
    pub async fn terminal_plan_indices(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<usize>, StoreError> {
        let rows = sqlx::query(
            "SELECT DISTINCT plan_index FROM runs WHERE experiment_id = $1 AND \
             (status = 'finished' OR (status = 'aborted' AND abort_reason LIKE $2)) \
             ORDER BY plan_index",
        )
        .bind(experiment.0)
        .bind(format!("{STOP_CONDITION_REASON}%"))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(uint(row.try_get(0)?) as usize))
            .collect()
    }

    pub async fn experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        let rows = sqlx::query(&format!("{EXPERIMENT_SELECT} ORDER BY id"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(experiment_of).collect()
    }

    pub async fn experiment(&self, id: ExperimentId) -> Result<Option<ExperimentRow>, StoreError> {
        self.row_by(
            &format!("{EXPERIMENT_SELECT} WHERE id = $1"),
            id.0,
            experiment_of,
        )
        .await
    }

    /// Every run of an experiment (every attempt), in plan order.
    pub async fn runs(&self, experiment: ExperimentId) -> Result<Vec<RunRow>, StoreError> {
        self.rows_by(
            "SELECT id, experiment_id, plan_index, round_index, condition_index, condition_label, \
             fault_kind, fault_rate, breaker_mode, condition_json, status, warmup_ms, duration_ms, \
             started_at_ms, finished_at_ms, abort_reason, requests, ok, failed, rejected, timeout, \
             connection_error, client_error, energy_joules, energy_source, load_errors \
             FROM runs WHERE experiment_id = $1 ORDER BY plan_index, id",
            experiment.0,
            run_of,
        )
        .await
    }

    pub async fn samples(&self, run: RunId) -> Result<Vec<SampleRow>, StoreError> {
        let sql = columns::select_of_run(&columns::samples(), "samples", "second");
        self.rows_by(&sql, run.0, sample_of).await
    }

    pub async fn endpoint_seconds(&self, run: RunId) -> Result<Vec<EndpointSecondRow>, StoreError> {
        let sql = columns::select_of_run(
            &columns::endpoint_seconds(),
            "endpoint_seconds",
            "second, endpoint",
        );
        self.rows_by(&sql, run.0, endpoint_second_of).await
    }

    /// One endpoint's per-second rows of a run, by second (what reads only `GET /cart`'s reads several-fold
    /// less than [`Self::endpoint_seconds`] on a long experiment).
    pub async fn endpoint_seconds_of(
        &self,
        run: RunId,
        endpoint: &str,
    ) -> Result<Vec<EndpointSecondRow>, StoreError> {
        let sql = columns::select_where(
            &columns::endpoint_seconds(),
            "endpoint_seconds",
            "run_id = $1 AND endpoint = $2",
            "second",
        );
        let rows = sqlx::query(&sql)
            .bind(run.0)
            .bind(endpoint)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(endpoint_second_of).collect()
    }

    pub async fn endpoint_histograms(
        &self,
        run: RunId,
    ) -> Result<Vec<EndpointHistogramRow>, StoreError> {
        let sql = columns::select_of_run(
            &columns::endpoint_histograms(),
            "endpoint_histograms",
            "endpoint",
        );
        self.rows_by(&sql, run.0, endpoint_histogram_of).await
    }

    pub async fn transitions(&self, run: RunId) -> Result<Vec<TransitionRecord>, StoreError> {
        let sql = columns::select_of_run(&columns::TRANSITIONS, "transitions", "ordinal");
        self.rows_by(&sql, run.0, transition_of).await
    }

    /// The run's event log (table `fault_events`), in the order it was stored.
    pub async fn run_events(&self, run: RunId) -> Result<Vec<RunEventRecord>, StoreError> {
        let sql = columns::select_of_run(&columns::FAULT_EVENTS, "fault_events", "ordinal");
        self.rows_by(&sql, run.0, run_event_record_of).await
    }

    /// The periods the run's fault was actually on (see [`super::applied_periods`]), from the run's start.
    pub async fn fault_periods(&self, run: RunId) -> Result<Vec<super::AppliedPeriod>, StoreError> {
        let started: Option<i64> = sqlx::query("SELECT started_at_ms FROM runs WHERE id = $1")
            .bind(run.0)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| row.try_get("started_at_ms"))
            .transpose()?
            .flatten();
        let events = self.run_events(run).await?;
        let origin = started.or(events.first().map(|e| e.at_ms)).unwrap_or(0);
        Ok(super::applied_periods(&events, origin))
    }

    /// The experiment marked `running` most recently (by start time) and its `running` run, if any:
    /// what an annotation written now is about.
    pub async fn running(&self) -> Result<Option<(ExperimentId, Option<RunId>)>, StoreError> {
        let row = sqlx::query(
            "SELECT e.id AS experiment_id, \
             (SELECT MAX(r.id) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'running') \
             AS run_id \
             FROM experiments e WHERE e.status = 'running' \
             ORDER BY COALESCE(e.started_at_ms, 0) DESC, e.id DESC LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let run: Option<i64> = row.try_get("run_id")?;
        Ok(Some((
            ExperimentId(row.try_get("experiment_id")?),
            run.map(RunId),
        )))
    }
}

/// A row of [`columns::samples`].
fn sample_of(row: &AnyRow) -> Result<SampleRow, StoreError> {
    let second: i64 = row.try_get("second")?;
    let extra: Option<String> = row.try_get("extra_json")?;
    Ok(SampleRow {
        second,
        warmup: row.try_get::<i64, _>("warmup")? != 0,
        outcomes: outcomes_of(row)?,
        collector: CollectorSample {
            second: uint(second),
            cart_mean_items: row.try_get("cart_mean_items")?,
            carts: row.try_get::<Option<i64>, _>("carts")?.map(uint),
            pool_in_flight: row.try_get::<Option<i64>, _>("pool_in_flight")?.map(uint),
            pool_queued: row.try_get::<Option<i64>, _>("pool_queued")?.map(uint),
            cpu_seconds: row.try_get("cpu_seconds")?,
            energy_joules: row.try_get("energy_joules")?,
            extra: extra
                .map(|text| json_of("samples.extra_json", text))
                .transpose()?,
        },
    })
}

/// A row of [`columns::endpoint_seconds`].
fn endpoint_second_of(row: &AnyRow) -> Result<EndpointSecondRow, StoreError> {
    Ok(EndpointSecondRow {
        second: row.try_get("second")?,
        endpoint: row.try_get("endpoint")?,
        outcomes: outcomes_of(row)?,
        latency: latency_of(row)?,
        p95_ok_us: row.try_get("p95_ok_us")?,
        p95_failed_us: row.try_get("p95_failed_us")?,
        histogram_v2: row.try_get("histogram")?,
    })
}

/// A row of [`columns::endpoint_histograms`].
fn endpoint_histogram_of(row: &AnyRow) -> Result<EndpointHistogramRow, StoreError> {
    Ok(EndpointHistogramRow {
        endpoint: row.try_get("endpoint")?,
        outcomes: outcomes_of(row)?,
        latency: latency_of(row)?,
        mean_us: row.try_get("mean_us")?,
        histogram_v2: row.try_get("histogram")?,
        histogram_ok_v2: row.try_get("histogram_ok")?,
    })
}

/// A row of [`columns::TRANSITIONS`].
fn transition_of(row: &AnyRow) -> Result<TransitionRecord, StoreError> {
    let detail: String = row.try_get("detail_json")?;
    Ok(TransitionRecord {
        at_ms: row.try_get("at_ms")?,
        service: row.try_get("service")?,
        breaker: row.try_get("breaker")?,
        from: wire_name("transitions.from_state", row.try_get("from_state")?)?,
        to: wire_name("transitions.to_state", row.try_get("to_state")?)?,
        reason: wire_name("transitions.reason", row.try_get("reason")?)?,
        detail: serde_json::from_str(&detail).map_err(|_| StoreError::Corrupt {
            column: "transitions.detail_json",
            value: detail,
        })?,
        seq: row.try_get("seq")?,
        shadow: row.try_get::<i64, _>("shadow")? != 0,
        source: row.try_get("source")?,
    })
}

/// A value stored as its wire name (a breaker state, a transition's reason), read back by that name only.
fn wire_name<T: serde::de::DeserializeOwned>(
    column: &'static str,
    text: String,
) -> Result<T, StoreError> {
    use serde::de::IntoDeserializer;
    let name: serde::de::value::StringDeserializer<serde::de::value::Error> =
        text.clone().into_deserializer();
    T::deserialize(name).map_err(|_| StoreError::Corrupt {
        column,
        value: text,
    })
}

/// A row of [`columns::FAULT_EVENTS`]: an unknown name, or a detail not of its name's shape, is corrupt.
fn run_event_record_of(row: &AnyRow) -> Result<RunEventRecord, StoreError> {
    let name: String = row.try_get("event")?;
    let kind = RunEventKind::parse(&name).ok_or(StoreError::Corrupt {
        column: "fault_events.event",
        value: name,
    })?;
    let detail: String = row.try_get("detail_json")?;
    let event = RunEvent::from_stored(kind, &detail).ok_or(StoreError::Corrupt {
        column: "fault_events.detail_json",
        value: detail,
    })?;
    Ok(RunEventRecord {
        at_ms: row.try_get("at_ms")?,
        fault_id: row.try_get("fault_id")?,
        event,
    })
}

/// The [`columns::LATENCY`] of a row, in that order.
fn latency_of(row: &AnyRow) -> Result<StoredLatency, sqlx::Error> {
    let [p50, p95, p99, max] = columns::LATENCY;
    Ok(StoredLatency {
        p50_us: row.try_get(p50)?,
        p95_us: row.try_get(p95)?,
        p99_us: row.try_get(p99)?,
        max_us: row.try_get(max)?,
    })
}

fn outcomes_of(row: &AnyRow) -> Result<OutcomeCounts, sqlx::Error> {
    Ok(OutcomeCounts {
        ok: uint(row.try_get("ok")?),
        failed: uint(row.try_get("failed")?),
        rejected: uint(row.try_get("rejected")?),
        timeout: uint(row.try_get("timeout")?),
        connection_error: uint(row.try_get("connection_error")?),
        client_error: uint(row.try_get("client_error")?),
    })
}

const EXPERIMENT_SELECT: &str = "SELECT id, name, spec_toml, seed, planned_runs, status, \
     created_at_ms, started_at_ms, finished_at_ms, abort_reason FROM experiments";

fn experiment_of(row: &AnyRow) -> Result<ExperimentRow, StoreError> {
    let status: String = row.try_get("status")?;
    Ok(ExperimentRow {
        id: ExperimentId(row.try_get("id")?),
        name: row.try_get("name")?,
        spec_toml: row.try_get("spec_toml")?,
        seed: row.try_get("seed")?,
        planned_runs: row.try_get("planned_runs")?,
        status: status_of(&status)?,
        created_at_ms: row.try_get("created_at_ms")?,
        started_at_ms: row.try_get("started_at_ms")?,
        finished_at_ms: row.try_get("finished_at_ms")?,
        abort_reason: row.try_get("abort_reason")?,
    })
}

fn run_of(row: &AnyRow) -> Result<RunRow, StoreError> {
    let status: String = row.try_get("status")?;
    let abort_reason: Option<String> = row.try_get("abort_reason")?;
    let requests: Option<i64> = row.try_get("requests")?;
    let outcomes = match requests {
        Some(_) => Some(outcomes_of(row)?),
        None => None,
    };
    let energy_joules: Option<f64> = row.try_get("energy_joules")?;
    let energy_source: Option<String> = row.try_get("energy_source")?;
    let energy = match (energy_joules, energy_source) {
        (Some(joules), Some(source)) => Some((joules, energy_source_of(source)?)),
        (None, None) => None,
        (joules, source) => {
            return Err(StoreError::Corrupt {
                column: "runs.energy_joules/energy_source",
                value: format!("{joules:?} / {source:?}"),
            });
        }
    };
    Ok(RunRow {
        id: RunId(row.try_get("id")?),
        experiment_id: ExperimentId(row.try_get("experiment_id")?),
        plan_index: row.try_get("plan_index")?,
        round_index: row.try_get("round_index")?,
        condition_index: row.try_get("condition_index")?,
        condition_label: row.try_get("condition_label")?,
        fault_kind: row.try_get("fault_kind")?,
        fault_rate: row.try_get("fault_rate")?,
        breaker_mode: row.try_get("breaker_mode")?,
        condition_json: row.try_get("condition_json")?,
        status: status_of(&status)?,
        warmup_ms: row.try_get("warmup_ms")?,
        duration_ms: row.try_get("duration_ms")?,
        started_at_ms: row.try_get("started_at_ms")?,
        finished_at_ms: row.try_get("finished_at_ms")?,
        abort_reason,
        outcomes,
        energy,
        load_errors: row.try_get::<Option<i64>, _>("load_errors")?.map(uint),
    })
}

/// A stored JSON column, decoded.
fn json_of(column: &'static str, text: String) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(&text).map_err(|_| StoreError::Corrupt {
        column,
        value: text,
    })
}

fn energy_source_of(text: String) -> Result<EnergySource, StoreError> {
    match text.as_str() {
        "measured" => Ok(EnergySource::Measured),
        "modelled" => Ok(EnergySource::Modelled),
        _ => Err(StoreError::Corrupt {
            column: "runs.energy_source",
            value: text,
        }),
    }
}
