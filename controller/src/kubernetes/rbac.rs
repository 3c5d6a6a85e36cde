//! Least privilege, checked: every (verb, resource) the code's Kubernetes API calls need, the one list the
//! manifests' Role is made of. The RBAC test drives every call against the mock API server, reads the verb and
//! resource of each request it sees, and compares them with the Role both ways (nothing missing, nothing extra).

/// One permission of the Role (core API group, namespaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Permission {
    pub verb: &'static str,
    pub resource: &'static str,
}

/// What the calls need, by call:
/// - discovery lists the pods by label (`list pods`) and the watch follows them (`watch pods`);
/// - a pod fault reads its pod (`get pods`), records and clears its lease as an annotation (`patch pods`),
///   deletes it (`delete pods`) or runs `kill` and `tc` in it (`pods/exec`: the websocket exec is a GET, which
///   API servers from 1.35 authorize as `create` too, so both are granted);
/// - the sweep lists the pods of the namespace (`list pods`) and clears expired annotations (`patch pods`).
pub const PERMISSIONS: &[Permission] = &[
    Permission {
        verb: "get",
        resource: "pods",
    },
    Permission {
        verb: "list",
        resource: "pods",
    },
    Permission {
        verb: "watch",
        resource: "pods",
    },
    Permission {
        verb: "patch",
        resource: "pods",
    },
    Permission {
        verb: "delete",
        resource: "pods",
    },
    Permission {
        verb: "get",
        resource: "pods/exec",
    },
    Permission {
        verb: "create",
        resource: "pods/exec",
    },
];

/// The permissions a request to the API server needs: its verb read from the method and the query
/// (`watch=true` on a list), its resource from the path (`/api/v1/namespaces/NS/pods[/NAME[/SUB]]`). Empty for a
/// path that is not a namespaced core resource.
pub fn needed_by(method: &http::Method, path: &str, query: &str) -> Vec<Permission> {
    let Some(rest) = path.strip_prefix("/api/v1/namespaces/") else {
        return Vec::new();
    };
    let mut parts = rest.split('/').skip(1);
    let Some(resource) = parts.next() else {
        return Vec::new();
    };
    let name = parts.next();
    let sub = parts.next();
    let resource: &'static str = match (resource, sub) {
        ("pods", None) => "pods",
        ("pods", Some("exec")) => "pods/exec",
        _ => return Vec::new(),
    };
    let watching = query.split('&').any(|pair| pair == "watch=true");
    let verbs: &[&'static str] = match (method.as_str(), name, resource) {
        ("GET", _, "pods/exec") | ("POST", _, "pods/exec") => &["get", "create"],
        ("GET", None, _) if watching => &["watch"],
        ("GET", None, _) => &["list"],
        ("GET", Some(_), _) => &["get"],
        ("PATCH", Some(_), _) => &["patch"],
        ("DELETE", Some(_), _) => &["delete"],
        ("POST", None, _) => &["create"],
        _ => &[],
    };
    verbs
        .iter()
        .map(|verb| Permission { verb, resource })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_as_the_verb_and_resource_rbac_checks() {
        let needed = |method: http::Method, path: &str, query: &str| {
            needed_by(&method, path, query)
                .into_iter()
                .map(|p| format!("{} {}", p.verb, p.resource))
                .collect::<Vec<_>>()
        };
        let pods = "/api/v1/namespaces/shop/pods";
        assert_eq!(
            needed(http::Method::GET, pods, "labelSelector=a"),
            ["list pods"]
        );
        assert_eq!(
            needed(http::Method::GET, pods, "watch=true&resourceVersion=1"),
            ["watch pods"]
        );
        assert_eq!(
            needed(http::Method::GET, &format!("{pods}/p"), ""),
            ["get pods"]
        );
        assert_eq!(
            needed(http::Method::PATCH, &format!("{pods}/p"), ""),
            ["patch pods"]
        );
        assert_eq!(
            needed(http::Method::DELETE, &format!("{pods}/p"), ""),
            ["delete pods"]
        );
        assert_eq!(
            needed(http::Method::GET, &format!("{pods}/p/exec"), "command=tc"),
            ["get pods/exec", "create pods/exec"]
        );
        assert!(needed(http::Method::GET, "/version", "").is_empty());
        assert!(needed(http::Method::GET, "/api/v1/namespaces/shop/secrets/s", "").is_empty());
    }
}
