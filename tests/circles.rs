//! Circles of files (`scripts/circles`, which defines what counts): the house may not gain any, and the tool
//! counts a circle it is shown and ignores what is not a use (a `mod x;` declaration, a re-export, a comment).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The most circles the house may have (issue 21: at most two, each with its reason at the top of its files); a
/// new circle beyond them fails this test.
const MOST_CIRCLES: usize = 2;

/// How a file of a circle states its reason: a paragraph of its `//!` header starting with this.
const REASON: &str = "In a circle with ";

fn circles(root: &Path) -> (usize, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/circles");
    let output = Command::new("python3")
        .arg(&script)
        .arg("--root")
        .arg(root)
        .output()
        .expect("python3 runs scripts/circles");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "scripts/circles failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let count = stdout
        .lines()
        .find_map(|line| line.strip_suffix(" circles of files"))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no count in: {stdout}"));
    (count, stdout)
}

#[test]
fn the_house_has_no_more_circles_than_it_had() {
    let (count, listing) = circles(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        count <= MOST_CIRCLES,
        "{count} circles of files, more than {MOST_CIRCLES}:\n{listing}"
    );
}

/// The files of every circle in a listing: the `  path -> …` lines under each `circle N:` header.
fn files_in_circles(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.strip_prefix("  ")?.split_once(" -> "))
        .map(|(file, _)| file.trim().to_owned())
        .collect()
}

/// Whether the file's leading `//!` header has a paragraph stating why it is in a circle, naming `others`.
fn states_its_reason(text: &str, others: &[&str]) -> bool {
    let header: Vec<&str> = text
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let joined = header.join(" ");
    let Some(at) = joined.find(REASON) else {
        return false;
    };
    let reason = &joined[at..];
    reason.contains(" because ")
        && others.iter().all(|other| {
            let name = other.rsplit('/').next().unwrap_or(other);
            reason.contains(name)
        })
}

#[test]
fn every_file_of_a_remaining_circle_states_why_at_its_top() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (_, listing) = circles(root);
    let mut circles: Vec<Vec<String>> = Vec::new();
    for line in listing.lines() {
        if line.starts_with("circle ") {
            circles.push(Vec::new());
        } else if let Some(current) = circles.last_mut() {
            current.extend(files_in_circles(line));
        }
    }
    for files in &circles {
        for file in files {
            let text = std::fs::read_to_string(root.join(file)).expect("a file of the listing");
            let others: Vec<&str> = files
                .iter()
                .filter(|other| *other != file)
                .map(String::as_str)
                .collect();
            assert!(
                states_its_reason(&text, &others),
                "{file} is in a circle with {others:?} but its `//!` header has no paragraph \
                 \"{REASON}… because …\" naming them:\n{listing}"
            );
        }
    }
}

#[test]
fn a_reason_names_the_other_files_and_says_why() {
    let text = "//! The breaker.\n//!\n//! In a circle with `permit.rs` because a permit records on its breaker.\n\nuse x;\n";
    assert!(states_its_reason(text, &["a/src/permit.rs"]));
    assert!(!states_its_reason(text, &["a/src/other.rs"]));
    assert!(!states_its_reason(
        "//! In a circle with `permit.rs`.\n",
        &["a/src/permit.rs"]
    ));
    assert!(!states_its_reason(
        "//! The breaker.\n\n// In a circle with `permit.rs` because of a comment below the header.\n",
        &["a/src/permit.rs"]
    ));
}

/// A throwaway workspace, removed when dropped.
struct Fixture(PathBuf);

impl Fixture {
    fn new(name: &str, files: &[(&str, &str)]) -> Self {
        let root = std::env::temp_dir().join(format!("circles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("fixture dir");
            std::fs::write(path, text).expect("fixture file");
        }
        Fixture(root)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MANIFESTS: [(&str, &str); 2] = [
    ("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n"),
    ("a/Cargo.toml", "[package]\nname = \"a\"\n"),
];

#[test]
fn two_files_using_each_other_are_one_circle() {
    let fixture = Fixture::new(
        "circle",
        &[
            MANIFESTS[0],
            MANIFESTS[1],
            ("a/src/lib.rs", "mod x;\nmod y;\n"),
            (
                "a/src/x.rs",
                "use crate::y::Y;\npub struct X(pub Option<Box<Y>>);\n",
            ),
            (
                "a/src/y.rs",
                "pub struct Y(pub Option<Box<super::x::X>>);\n",
            ),
        ],
    );
    let (count, listing) = circles(&fixture.0);
    assert_eq!(count, 1, "{listing}");
    assert!(listing.contains("a/src/x.rs -> a/src/y.rs"), "{listing}");
}

#[test]
fn declarations_re_exports_and_comments_are_not_uses() {
    let fixture = Fixture::new(
        "none",
        &[
            MANIFESTS[0],
            MANIFESTS[1],
            // The root declares and re-exports its children; the children use each other through it.
            (
                "a/src/lib.rs",
                "mod x;\nmod y;\npub use x::X;\npub use y::Y;\n",
            ),
            ("a/src/x.rs", "pub struct X;\n"),
            (
                "a/src/y.rs",
                "// crate::y::Y is not a use of this file by itself\nuse crate::X;\npub struct Y(pub X);\n",
            ),
        ],
    );
    let (count, listing) = circles(&fixture.0);
    assert_eq!(count, 0, "{listing}");
}
