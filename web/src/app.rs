//! The dashboard's one router: API, pages, websocket and static assets.

use axum::Router;
use axum::routing::{get, post, put};

use crate::state::AppState;
use crate::{advisor, api, assets, automation_api, live, pages, simulate};

/// Every route of the dashboard.
pub fn router(state: AppState) -> Router {
    Router::new()
        // Controller HTTP API (docs/wire.md, docs/chaos-toolkit.md).
        .route(
            "/api/experiments",
            get(api::list_experiments).post(api::create_experiment),
        )
        .route("/api/experiments/{id}", get(api::experiment))
        .route("/api/experiments/{id}/start", post(api::start_experiment))
        .route("/api/experiments/{id}/abort", post(api::abort_experiment))
        .route("/api/experiments/{id}/results", get(api::results))
        .route(
            "/api/experiments/{id}/runs/{run}/figures",
            get(automation_api::run_figures),
        )
        .route(
            "/api/experiments/{id}/validate",
            get(automation_api::validate),
        )
        .route(
            "/api/experiments/{id}/runs/{run}/timeline",
            get(api::run_timeline),
        )
        .route("/api/experiments/{id}/results.csv", get(api::results_csv))
        .route("/api/experiments/{id}/results.json", get(api::results_json))
        .route("/api/halt", post(api::halt))
        .route(
            "/api/annotations",
            get(api::annotations).post(api::annotate),
        )
        .route(
            "/api/faults/{id}",
            put(api::set_fault).delete(api::clear_fault),
        )
        .route(
            "/api/containers",
            get(api::containers).post(api::set_container_fault),
        )
        .route(
            "/api/containers/faults/{id}",
            axum::routing::delete(api::clear_container_fault),
        )
        .route("/api/faults", get(automation_api::faults))
        .route("/api/workers", get(automation_api::workers))
        .route(
            "/api/breakers",
            get(automation_api::breakers).post(api::set_breaker_mode),
        )
        .route(
            "/api/load",
            put(automation_api::start_load).delete(automation_api::stop_load),
        )
        .route("/api/breaker-events", post(api::breaker_events))
        .route("/api/simulate", get(simulate::simulate))
        .route("/api/simulate/spec", get(simulate::spec))
        .route("/api/tune", post(advisor::tune_handler))
        .route("/ws", get(live::websocket))
        // Pages.
        .route("/", get(pages::experiments))
        .route("/experiments", get(pages::experiments))
        .route("/experiments/{id}/results", get(pages::results))
        .route("/live", get(pages::live))
        .route("/gameday", get(pages::gameday))
        .route("/simulate", get(pages::simulate))
        .route("/advisor", get(pages::advisor))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", post(pages::logout))
        // Form posts of the pages (session cookie + CSRF field).
        .route("/ui/experiments", post(pages::create_experiment))
        .route("/ui/experiments/{id}/start", post(pages::start_experiment))
        .route("/ui/experiments/{id}/abort", post(pages::abort_experiment))
        .route("/ui/halt", post(pages::halt))
        .route("/ui/fault", post(pages::set_fault))
        .route("/ui/fault/clear", post(pages::clear_fault))
        .route("/ui/container-fault", post(pages::set_container_fault))
        .route(
            "/ui/container-fault/clear",
            post(pages::clear_container_fault),
        )
        .route("/ui/breakers", post(pages::set_breaker_mode))
        .route("/ui/annotate", post(pages::annotate))
        .route("/ui/load", post(pages::set_load))
        .route("/ui/advisor/verify", post(pages::verify_advice))
        .fallback(pages::not_found)
        .route("/static/{file}", get(assets::serve))
        // Liveness for container health checks: answers while the dashboard serves.
        .route("/_healthz", get(|| async { "ok" }))
        // The process's live task count (`serving::runtime`), for long runs watching for leaks.
        .route("/metrics", get(serving::runtime::alive_tasks_exposition))
        .with_state(state)
}
