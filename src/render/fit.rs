//! Size limits of the places reports land (a PR comment: 65,536 characters; a step
//! summary: 1 MiB): show as many findings as fit, most severe first, and say what was cut.

use crate::report::Finding;
use crate::severity::Severity;

/// The largest `k` in `0..=n` for which `render(k)` `fits`, with that rendering; `render`
/// must grow with `k` (it shows the first `k` findings). Tries O(log n) renderings.
pub(crate) fn largest_fitting(
    n: usize,
    fits: impl Fn(&str) -> bool,
    render: impl Fn(usize) -> String,
) -> (usize, String) {
    let all = render(n);
    if fits(&all) {
        return (n, all);
    }
    let (mut lo, mut hi) = (0, n); // render(lo) is the best known to fit; render(hi) does not
    let mut best = render(0);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let text = render(mid);
        if fits(&text) {
            lo = mid;
            best = text;
        } else {
            hi = mid;
        }
    }
    (lo, best)
}

/// "3 findings (2 low, 1 info)": what `list` holds, by severity, most severe first.
pub(crate) fn describe(list: &[Finding]) -> String {
    let by: Vec<String> = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ]
    .iter()
    .filter_map(|s| {
        let n = list.iter().filter(|f| f.severity == *s).count();
        (n > 0).then(|| format!("{n} {s}"))
    })
    .collect();
    match list.len() {
        0 => "no findings".to_string(),
        1 => format!("1 finding ({})", by.join(", ")),
        n => format!("{n} findings ({})", by.join(", ")),
    }
}

/// The first `max` characters of `s` (on a char boundary).
pub(crate) fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_largest_prefix_that_fits() {
        let render = |k: usize| "x".repeat(10 + 3 * k);
        assert_eq!(largest_fitting(100, |s| s.len() <= 40, render).0, 10);
        assert_eq!(largest_fitting(5, |s| s.len() <= 400, render).0, 5);
        let (k, text) = largest_fitting(5, |s| s.len() <= 5, render);
        assert_eq!((k, text.len()), (0, 10), "nothing fits: the caller cuts");
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hé", 9), "hé");
    }
}
