//! Reading the little of each language a breaker config is written in: comments, top-level lists, quoted
//! strings, and the durations of Spring (`50s`, `1000` ms, `PT50S`), .NET (`00:00:30`) and Go
//! (`30 * time.Second`).

use std::time::Duration;

use super::model::LibraryError;

/// `text` without `//` and `/* */` comments (and `#` ones when `hash`), strings left alone.
pub(super) fn strip_comments(text: &str, hash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            '"' | '\'' | '`' => {
                quote = Some(c);
                out.push(c);
                i += 1;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '#' if hash => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The text between the bracket at byte `open` and its matching close, brackets inside strings ignored.
pub(super) fn enclosed(text: &str, open: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let opener = *bytes.get(open)?;
    let closer = match opener {
        b'{' => b'}',
        b'(' => b')',
        b'[' => b']',
        _ => return None,
    };
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut i = open;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q {
                quote = None;
            }
        } else if matches!(b, b'"' | b'\'' | b'`') {
            quote = Some(b);
        } else if b == opener {
            depth += 1;
        } else if b == closer {
            depth -= 1;
            if depth == 0 {
                return text.get(open + 1..i);
            }
        }
        i += 1;
    }
    None
}

/// `text` split at `separator`s outside brackets and strings, each part trimmed, empty parts left out.
pub(super) fn split_top_level(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        if let Some(q) = quote {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => {
                quote = Some(c);
                current.push(c);
            }
            '{' | '(' | '[' => {
                depth += 1;
                current.push(c);
            }
            '}' | ')' | ']' => {
                depth -= 1;
                current.push(c);
            }
            c if c == separator && depth == 0 => {
                parts.push(current.trim().to_owned());
                current.clear();
            }
            _ => current.push(c),
        }
    }
    parts.push(current.trim().to_owned());
    parts.retain(|p| !p.is_empty());
    parts
}

/// A quoted string's content (`"x"`, `'x'`, `` `x` ``), or `None` when `text` is not one.
pub(super) fn unquote(text: &str) -> Option<String> {
    let text = text.trim();
    let first = text.chars().next()?;
    if matches!(first, '"' | '\'' | '`') && text.len() >= 2 && text.ends_with(first) {
        Some(text[1..text.len() - 1].to_owned())
    } else {
        None
    }
}

/// A finite number, or an error naming `field`.
pub(super) fn number(field: &str, text: &str) -> Result<f64, LibraryError> {
    let cleaned = text.trim().replace('_', "");
    cleaned
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| LibraryError::new(field, format!("`{}` is not a number", text.trim())))
}

/// A whole number between `min` and `max`, or an error naming `field`.
pub(super) fn whole(field: &str, text: &str, min: u64, max: u64) -> Result<u64, LibraryError> {
    let v = number(field, text)?;
    if v.fract() != 0.0 || v < min as f64 || v > max as f64 {
        return Err(LibraryError::new(
            field,
            format!(
                "`{}` is not a whole number between {min} and {max}",
                text.trim()
            ),
        ));
    }
    Ok(v as u64)
}

/// Longest duration any library field may hold here: a year.
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

fn bounded(field: &str, seconds: f64) -> Result<Duration, LibraryError> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(LibraryError::new(field, "must be a duration of 0 or more"));
    }
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|_| LibraryError::new(field, "is not a duration"))?;
    if duration > MAX_DURATION {
        return Err(LibraryError::new(field, "must be at most a year"));
    }
    Ok(duration)
}

/// A Spring Boot duration: a number of milliseconds, a simple form (`50s`, `500ms`, `1m`, `2h`, `1d`) or
/// ISO-8601 (`PT50S`, `PT0.5S`, `PT1M`).
pub(super) fn spring_duration(field: &str, text: &str) -> Result<Duration, LibraryError> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<f64>() {
        return bounded(field, ms / 1000.0);
    }
    let upper = text.to_ascii_uppercase();
    if let Some(iso) = upper.strip_prefix("PT") {
        let mut seconds = 0.0;
        let mut number = String::new();
        for c in iso.chars() {
            match c {
                '0'..='9' | '.' => number.push(c),
                'H' | 'M' | 'S' => {
                    let v: f64 = number.parse().map_err(|_| {
                        LibraryError::new(field, format!("`{text}` is not an ISO-8601 duration"))
                    })?;
                    seconds += v * match c {
                        'H' => 3600.0,
                        'M' => 60.0,
                        _ => 1.0,
                    };
                    number.clear();
                }
                _ => {
                    return Err(LibraryError::new(
                        field,
                        format!("`{text}` is not an ISO-8601 duration"),
                    ));
                }
            }
        }
        return bounded(field, seconds);
    }
    let duration = humantime::parse_duration(text).map_err(|_| {
        LibraryError::new(
            field,
            format!("`{text}` is not a duration (write e.g. 50s or 500ms)"),
        )
    })?;
    bounded(field, duration.as_secs_f64())
}

/// A .NET `TimeSpan` as configuration binds it: `[d.]hh:mm:ss[.fffffff]`.
pub(super) fn timespan(field: &str, text: &str) -> Result<Duration, LibraryError> {
    let bad = || {
        LibraryError::new(
            field,
            format!("`{text}` is not a TimeSpan (write e.g. \"00:00:30\")"),
        )
    };
    let (days, clock) = match text.trim().split_once('.') {
        Some((d, rest)) if !d.contains(':') => (d.parse::<f64>().map_err(|_| bad())?, rest),
        _ => (0.0, text.trim()),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    if parts.len() != 3 {
        return Err(bad());
    }
    let hours: f64 = parts[0].parse().map_err(|_| bad())?;
    let minutes: f64 = parts[1].parse().map_err(|_| bad())?;
    let seconds: f64 = parts[2].parse().map_err(|_| bad())?;
    bounded(
        field,
        days * 86_400.0 + hours * 3600.0 + minutes * 60.0 + seconds,
    )
}

/// A `TimeSpan` as text, the shortest form that reads back (`00:00:30`, `00:00:00.5`, `1.00:00:00`).
pub(super) fn timespan_text(duration: Duration) -> String {
    let total = duration.as_secs();
    let (days, rest) = (total / 86_400, total % 86_400);
    let clock = format!(
        "{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    let fraction = duration.subsec_nanos();
    let clock = if fraction == 0 {
        clock
    } else {
        let digits = format!("{:07}", fraction / 100);
        format!("{clock}.{}", digits.trim_end_matches('0'))
    };
    if days > 0 {
        format!("{days}.{clock}")
    } else {
        clock
    }
}

/// A Go `time.Duration` expression: products of numbers, `time.Duration(n)` and `time.Nanosecond` …
/// `time.Hour`; a bare number is nanoseconds.
pub(super) fn go_duration(field: &str, expr: &str) -> Result<Duration, LibraryError> {
    let mut nanos = 1.0;
    let mut unit_seen = false;
    for factor in expr.split('*') {
        let factor = factor.trim();
        let inner = factor
            .strip_prefix("time.Duration(")
            .and_then(|f| f.strip_suffix(')'))
            .unwrap_or(factor);
        let unit = match inner {
            "time.Nanosecond" => Some(1.0),
            "time.Microsecond" => Some(1e3),
            "time.Millisecond" => Some(1e6),
            "time.Second" => Some(1e9),
            "time.Minute" => Some(60e9),
            "time.Hour" => Some(3600e9),
            _ => None,
        };
        match unit {
            Some(unit) => {
                nanos *= unit;
                unit_seen = true;
            }
            None => {
                nanos *= inner.replace('_', "").parse::<f64>().map_err(|_| {
                    LibraryError::new(
                        field,
                        format!("`{expr}` is not a duration (write e.g. 30 * time.Second)"),
                    )
                })?;
            }
        }
    }
    let _ = unit_seen;
    bounded(field, nanos / 1e9)
}

/// A duration as Go source: `30 * time.Second`, `500 * time.Millisecond`, `0`.
pub(super) fn go_duration_text(duration: Duration) -> String {
    let ms = duration.as_millis();
    if duration.is_zero() {
        "0".to_owned()
    } else if duration.subsec_nanos() == 0 {
        let s = duration.as_secs();
        if s % 3600 == 0 {
            format!("{} * time.Hour", s / 3600)
        } else if s % 60 == 0 {
            format!("{} * time.Minute", s / 60)
        } else {
            format!("{s} * time.Second")
        }
    } else if duration.subsec_nanos() % 1_000_000 == 0 {
        format!("{ms} * time.Millisecond")
    } else {
        format!("{} * time.Nanosecond", duration.as_nanos())
    }
}

/// A duration as Spring writes it: `50s`, `500ms`.
pub(super) fn spring_duration_text(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_of_each_language_read_and_write_back() {
        let s = Duration::from_secs;
        assert_eq!(spring_duration("f", "50s"), Ok(s(50)));
        assert_eq!(spring_duration("f", "1000"), Ok(s(1)));
        assert_eq!(spring_duration("f", "PT1M30S"), Ok(s(90)));
        assert_eq!(
            spring_duration("f", "500ms"),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            spring_duration("f", "soon").map_err(|e| e.field),
            Err("f".to_owned())
        );
        assert_eq!(timespan("f", "00:00:30"), Ok(s(30)));
        assert_eq!(timespan("f", "1.00:00:00"), Ok(s(86_400)));
        assert_eq!(
            timespan("f", "00:00:00.500"),
            Ok(Duration::from_millis(500))
        );
        assert!(timespan("f", "30s").is_err());
        for d in [s(30), s(86_400), Duration::from_millis(500), s(3_725)] {
            assert_eq!(
                timespan("f", &timespan_text(d)),
                Ok(d),
                "{}",
                timespan_text(d)
            );
            assert_eq!(
                go_duration("f", &go_duration_text(d)),
                Ok(d),
                "{}",
                go_duration_text(d)
            );
            assert_eq!(spring_duration("f", &spring_duration_text(d)), Ok(d));
        }
        assert_eq!(go_duration("f", "time.Second * 30"), Ok(s(30)));
        assert_eq!(
            go_duration("f", "time.Duration(2) * time.Minute"),
            Ok(s(120))
        );
        assert!(go_duration("f", "30 * time.Fortnight").is_err());
        assert!(spring_duration("f", "400d").is_err(), "over a year");
    }

    #[test]
    fn lists_split_outside_brackets_and_strings_and_comments_go() {
        assert_eq!(
            split_top_level("a: 1, b: f(x, y), c: \"p, q\"", ','),
            vec!["a: 1", "b: f(x, y)", "c: \"p, q\""]
        );
        assert_eq!(
            strip_comments("a // x\nb /* y */ c \"//no\"", false),
            "a \nb  c \"//no\""
        );
        assert_eq!(strip_comments("a # x\nb", true), "a \nb");
        assert_eq!(enclosed("f(a, (b), c) d", 1), Some("a, (b), c"));
        assert_eq!(unquote("'x'"), Some("x".to_owned()));
        assert_eq!(unquote("x"), None);
    }
}
