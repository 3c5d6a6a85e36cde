//! The advisor over HTTP: `POST /api/tune` runs `controller::advisor` on a JSON body `{input, current?,
//! library?, instance?}` (the `tolerant tune` input's TOML, a current config in Tolerant's TOML or a library's
//! format) and answers the same JSON as `tolerant tune --json` (`recommended`, `why`, `front`, `current`) plus
//! what the page draws and offers: every feasible candidate's point, the recommendation in each library's format
//! (or why that library cannot express it), and the verification's experiment spec. It reads and changes nothing
//! of the controller, so like the simulator it needs no login; one search runs at a time, on a blocking thread,
//! and a bad input is a 400 naming the field (and its line).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::Json;
use controller::advisor::{self, AdviseOptions, CurrentConfig, Library, MAX_FILE_BYTES, TuneInput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::error::AppError;

/// One search at a time: a search is seconds of CPU, and the page needs no login.
static SEARCHES: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(1));
/// Longest a search waits for its turn.
const SEARCH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `POST /api/tune`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneRequest {
    /// The advisor's input (TOML).
    pub input: String,
    /// The current config: Tolerant's TOML, or a library's file text (see `library`).
    #[serde(default)]
    pub current: Option<String>,
    /// The library `current` is written for; absent: recognised from the text, else Tolerant's TOML.
    #[serde(default)]
    pub library: Option<String>,
    /// The Resilience4j instance of `current`, when it has several.
    #[serde(default)]
    pub instance: Option<String>,
}

fn current_of(request: &TuneRequest) -> Result<Option<CurrentConfig>, AppError> {
    let Some(text) = request.current.as_deref().filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let library = match request.library.as_deref().filter(|l| !l.is_empty()) {
        Some("tolerant") => None,
        Some(name) => Some(
            name.parse::<Library>()
                .map_err(|e| AppError::BadRequest(format!("library: {e}")))?,
        ),
        None => Library::recognise("", text),
    };
    CurrentConfig::read(text, library, request.instance.as_deref())
        .map(Some)
        .map_err(|e| AppError::BadRequest(format!("current: {e}")))
}

/// The search and everything the page shows of it, on the calling (blocking) thread.
pub fn tune(request: &TuneRequest) -> Result<TuneAnswer, AppError> {
    for (field, text) in [
        ("input", Some(&request.input)),
        ("current", request.current.as_ref()),
    ] {
        if text.is_some_and(|t| t.len() as u64 > MAX_FILE_BYTES) {
            return Err(AppError::BadRequest(format!(
                "{field}: longer than {MAX_FILE_BYTES} bytes"
            )));
        }
    }
    let input =
        TuneInput::parse(&request.input).map_err(|e| AppError::BadRequest(e.to_string()))?;
    let current = current_of(request)?;
    let advice = advisor::advise(&input, current.as_ref(), &AdviseOptions::default())
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let points = advice
        .evaluations
        .iter()
        .filter(|e| e.feasible())
        .map(|e| [e.cost.rejected_success, e.saved_s])
        .collect();
    let exports = Library::ALL
        .into_iter()
        .map(|library| {
            let export = match library.export(&advice.recommended.config, &input.name, &[]) {
                Ok(exported) => Export::Text {
                    text: exported.text,
                    file: format!("{}-{}.{}", input.name, library, library.extension()),
                },
                Err(error) => Export::Error {
                    error: error.to_string(),
                },
            };
            (library.as_str(), export)
        })
        .collect();
    // The dashboard reads no file named by its input: a testbed of one's own is verified from the command line.
    let spec = match &input.verify.spec {
        Some(_) => VerificationSpec::Error {
            error: "verify.spec: a spec of one's own is verified with `tolerant tune --verify`, not from the dashboard".into(),
        },
        None => match advisor::verify::plan(&input, &advice, current.as_ref(), None) {
            Ok(plan) => VerificationSpec::Toml {
                toml: plan.spec_toml,
            },
            Err(error) => VerificationSpec::Error {
                error: error.to_string(),
            },
        },
    };
    Ok(TuneAnswer {
        advice: advice.to_json(),
        points,
        exports,
        spec,
    })
}

/// `POST /api/tune`'s answer: `tolerant tune --json`'s four keys and what the page draws and offers.
#[derive(Debug, Serialize)]
pub struct TuneAnswer {
    /// `recommended`, `why`, `front`, `current`, exactly as `tolerant tune --json` prints them.
    #[serde(flatten)]
    advice: Value,
    /// Every feasible candidate as `[cost of rejections, caller-seconds saved]`, per hour.
    points: Vec<[f64; 2]>,
    /// The recommendation in each library's format, by the library's name.
    exports: BTreeMap<&'static str, Export>,
    /// The verification's experiment spec.
    spec: VerificationSpec,
}

/// The recommendation in one library's format, or why that library cannot express it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Export {
    Text { text: String, file: String },
    Error { error: String },
}

/// The experiment `--verify` would run, or why there is none.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum VerificationSpec {
    Toml { toml: String },
    Error { error: String },
}

/// `POST /api/tune`.
pub async fn tune_handler(Json(request): Json<TuneRequest>) -> Result<Json<TuneAnswer>, AppError> {
    // Searches queue for their turn; one that waited a minute gives up.
    let Ok(Ok(_permit)) = tokio::time::timeout(SEARCH_WAIT, SEARCHES.acquire()).await else {
        return Err(AppError::TooMany(
            "other searches are running; try again when they have finished".into(),
        ));
    };
    tokio::task::spawn_blocking(move || tune(&request))
        .await
        .map_err(|error| AppError::Internal(format!("the search did not finish: {error}")))?
        .map(Json)
}
