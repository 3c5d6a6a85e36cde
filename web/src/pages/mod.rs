//! The HTML pages (askama templates in `web/templates/`) and the form posts they make, one module per page.
//! Forms carry the session's CSRF token in a hidden `csrf` field, checked before a handler runs ([`Posted`]); a
//! refused post answers 401/403 like the API.

mod advisor;
mod experiments;
mod gameday;
mod live;
mod login;
mod posted;
mod results;
mod simulate;
pub(crate) mod viewer;

use askama::Template;
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use http::header::SET_COOKIE;

use crate::error::{AppError, PageError};
use crate::operations::AnnotationEntry;
use crate::state::AppState;

pub use advisor::{advisor, verify as verify_advice};
pub use experiments::{
    CreateForm, EXAMPLE_SPEC, ExperimentLine, StartForm, abort_experiment, create_experiment,
    experiments, start_experiment,
};
pub use gameday::{
    AnnotateForm, BreakerForm, ClearFaultForm, FaultForm, GAME_DAY_FAULT_ID, HaltForm, LoadForm,
    annotate, clear_container_fault, clear_fault, fault_of_form, gameday, halt, set_breaker_mode,
    set_container_fault, set_fault, set_load,
};
pub use live::live;
pub use login::{LoginForm, NextQuery, login, login_form, logout};
pub use posted::{CsrfForm, Posted};
pub use results::{CellText, results};
pub use simulate::simulate;
pub use viewer::Viewer;

impl Viewer {
    pub(crate) fn of(state: &AppState, headers: &HeaderMap) -> Viewer {
        let shop_url = state.shop_url.clone().unwrap_or_default();
        let notice = take_notice(headers);
        let problem = notice
            .as_deref()
            .is_some_and(|text| text.starts_with(PROBLEM_MARK));
        let notice = notice.map(|text| text.trim_start_matches(PROBLEM_MARK).to_owned());
        match state.auth.session(headers) {
            Some(session) => Viewer {
                logged_in: true,
                csrf: session.csrf,
                shop_url,
                notice,
                problem,
            },
            None => Viewer {
                shop_url,
                notice,
                problem,
                ..Viewer::anonymous()
            },
        }
    }
}

/// A page that has a viewer (every page extends `base.html`).
pub(crate) trait Page: Template {
    fn viewer(&self) -> &Viewer;
}

macro_rules! page {
    ($($page:ty),*) => {$(impl crate::pages::Page for $page {
        fn viewer(&self) -> &crate::pages::Viewer { &self.viewer }
    })*};
}
pub(crate) use page;

/// Renders a page; a notice it shows is cleared so it shows once.
pub(crate) fn render(page: &impl Page) -> Result<Response, PageError> {
    let html = Html(page.render().map_err(AppError::from)?).into_response();
    Ok(with_notice_cleared(html, page.viewer().notice.is_some()))
}

/// The cookie carrying a one-time notice to the next page (`Path=/`, gone after 60 s or once shown).
const NOTICE_COOKIE: &str = "tolerant_notice";

/// A redirect to `to` that leaves `notice` for that page to show once (what the action did, or why not).
pub(crate) fn redirect_with_notice(to: &str, notice: &str) -> Response {
    let hex: String = notice
        .bytes()
        .take(600)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    (
        [(
            SET_COOKIE,
            format!("{NOTICE_COOKIE}={hex}; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"),
        )],
        Redirect::to(to),
    )
        .into_response()
}

/// What a refused action's notice starts with in the cookie: the page shows it as a problem.
const PROBLEM_MARK: char = '\u{1}';

/// A redirect to `to` that leaves `problem` (why an action was refused) for that page to show once, where the
/// action was asked, instead of an error page.
pub(crate) fn redirect_with_problem(to: &str, problem: &str) -> Response {
    redirect_with_notice(to, &format!("{PROBLEM_MARK}{problem}"))
}

/// The notice a redirect left, if any (and valid UTF-8).
fn take_notice(headers: &HeaderMap) -> Option<String> {
    let hex = headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(&format!("{NOTICE_COOKIE}=")))?
        .to_owned();
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A page response that also clears the notice it showed.
fn with_notice_cleared(response: Response, had_notice: bool) -> Response {
    if !had_notice {
        return response;
    }
    (
        [(
            SET_COOKIE,
            format!("{NOTICE_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"),
        )],
        response,
    )
        .into_response()
}

/// Any path the dashboard does not serve: the error page, not an empty answer.
pub async fn not_found() -> PageError {
    PageError(AppError::NotFound("no such page".into()))
}

/// `1732896000123` → `2024-11-29 16:00:00 UTC`.
pub fn format_ms(ms: i64) -> String {
    if ms <= 0 {
        return String::from("–");
    }
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    let text = humantime::format_rfc3339_seconds(time).to_string();
    text.replace('T', " ").replace('Z', " UTC")
}

pub(crate) fn format_optional_ms(ms: &Option<i64>) -> String {
    ms.map(format_ms).unwrap_or_else(|| String::from("–"))
}

pub(crate) fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude == 0.0 {
        "0".into()
    } else if magnitude >= 100.0 || value.fract() == 0.0 {
        // A whole figure (a count: opens, requests) reads whole.
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        // Three significant digits: `0.00354`, not `0.004`.
        let decimals = 2 - magnitude.log10().floor() as i32;
        format!("{value:.*}", decimals.clamp(3, 12) as usize)
    }
}

/// An annotation as the pages list it, preformatted.
#[derive(Debug, Clone)]
pub struct AnnotationLine {
    pub at: String,
    pub text: String,
    /// `alice`, or empty.
    pub author: String,
    /// `run 12`, or empty when it was written between runs.
    pub run: String,
}

impl AnnotationLine {
    pub(crate) fn of(entry: &AnnotationEntry) -> AnnotationLine {
        AnnotationLine {
            at: format_ms(entry.at_ms),
            text: entry.text.clone(),
            author: entry.author.clone().unwrap_or_default(),
            run: entry
                .run_id
                .map(|run| format!("run {run}"))
                .unwrap_or_default(),
        }
    }
}
