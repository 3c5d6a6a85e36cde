//! What every page's layout needs to know of who is looking: logged in or not, the CSRF token, the shop's
//! link, a one-time notice.

/// What every page's layout needs.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub logged_in: bool,
    /// The session's CSRF token (empty when not logged in).
    pub csrf: String,
    /// The shop the header links to (empty: no link).
    pub shop_url: String,
    /// What the last action did, or why not (shown once, under the header).
    pub notice: Option<String>,
    /// The notice says why an action was refused (shown as a problem, not as done).
    pub problem: bool,
}

impl Viewer {
    /// Nobody logged in, no shop link (the error page, which knows no state).
    pub fn anonymous() -> Viewer {
        Viewer {
            logged_in: false,
            csrf: String::new(),
            shop_url: String::new(),
            notice: None,
            problem: false,
        }
    }
}
