//! What every handler of the dashboard may need: the hub, the operations, auth, the shop's link, the push inbox.

use std::sync::Arc;

use axum::extract::FromRef;
use controller::sources::PushInbox;

use crate::auth::Auth;
use crate::hub::Hub;
use crate::operations::Operations;

/// Everything a handler may need.
#[derive(Clone)]
pub struct AppState {
    pub hub: Hub,
    pub operations: Arc<dyn Operations>,
    pub auth: Arc<Auth>,
    /// The shop's (the boutique frontend's) URL the header links to, when the dashboard runs one.
    pub shop_url: Option<String>,
    /// Takes pushed foreign breaker events (`POST /api/breaker-events`).
    pub breaker_inbox: PushInbox,
    /// The bounded pool `/api/simulate` runs on.
    pub simulations: crate::simulation_pool::SimulationPool,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("hub", &self.hub).finish()
    }
}

impl FromRef<AppState> for Hub {
    fn from_ref(state: &AppState) -> Hub {
        state.hub.clone()
    }
}
