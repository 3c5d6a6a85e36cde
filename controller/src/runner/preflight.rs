//! Preflight: before an experiment is stored, every target of the testbed must answer and take the token, so a
//! typo in `[targets]` or a wrong `--token` fails at once with the target named, not at run 1 after the experiment
//! row exists.
//!
//! The checks change nothing: `GET /_healthz` on every service; a breaker-mode switch with an empty body on every
//! service (a valid token gets `400 mode: missing`, a wrong one `401`); on the agent, `GET /_agent/faults` and a
//! renew of a fault id that cannot exist (a valid token gets `404`, a wrong one `401`).

use bytes::Bytes;
use http::{Method, StatusCode};

use super::{AdminError, Runner, RunnerError};

/// A fault id no controller puts (ids are checked by the agent; this one is only ever renewed, never put).
const PREFLIGHT_FAULT_ID: &str = "tolerant-preflight-token-check";

impl Runner {
    /// Checks that every service and the agent answer and accept the token (see the module docs). The error names
    /// the target as the spec's `[targets]` table does.
    pub async fn check_testbed(&self) -> Result<(), RunnerError> {
        for (name, url) in &self.testbed.services {
            let field = format!("targets.{name}");
            self.admin
                .call(Method::GET, &format!("{url}/_healthz"), None, Bytes::new())
                .await
                .map_err(|error| unreachable(&field, &error))?;
            let mode_switch = self
                .admin
                .call(
                    Method::PUT,
                    &format!("{url}/_admin/breakers/mode"),
                    Some("application/json"),
                    Bytes::from_static(b"{}"),
                )
                .await;
            expect_refusal_of_the_request(&field, mode_switch, StatusCode::BAD_REQUEST)?;
        }
        let agent = &self.testbed.agent;
        self.admin
            .call(
                Method::GET,
                &format!("{agent}/_agent/faults"),
                None,
                Bytes::new(),
            )
            .await
            .map_err(|error| unreachable("targets.agent", &error))?;
        let renew = self
            .admin
            .call(
                Method::POST,
                &format!("{agent}/_agent/faults/{PREFLIGHT_FAULT_ID}/renew"),
                Some("application/json"),
                Bytes::from_static(b"{}"),
            )
            .await;
        expect_refusal_of_the_request("targets.agent", renew, StatusCode::NOT_FOUND)
    }
}

fn unreachable(field: &str, error: &AdminError) -> RunnerError {
    RunnerError::Testbed(format!("{field}: does not answer ({error})"))
}

/// A probe that a target must refuse with `expected` (the request itself is wrong on purpose, so nothing changes):
/// `401`/`403` means the token is not accepted, anything else that the target is not what the spec says.
fn expect_refusal_of_the_request(
    field: &str,
    answered: Result<Bytes, AdminError>,
    expected: StatusCode,
) -> Result<(), RunnerError> {
    match answered {
        Err(AdminError::Status { status, .. }) if status == expected => Ok(()),
        Err(AdminError::Status { status, url, .. })
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
        {
            Err(RunnerError::Testbed(format!(
                "{field}: {url} refuses the token (HTTP {status}); check --token / TOLERANT_TOKEN"
            )))
        }
        Err(error) => Err(RunnerError::Testbed(format!(
            "{field}: unexpected answer to a preflight check ({error})"
        ))),
        Ok(_) => Err(RunnerError::Testbed(format!(
            "{field}: accepted a preflight request it should refuse with {expected}; is it a Tolerant service?"
        ))),
    }
}
