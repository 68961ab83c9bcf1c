//! Findings extraction on hostile and large answers: CPU time (this thread's,
//! RUSAGE_THREAD) and throughput per shape, so the linear pass can be compared with what
//! came before. Shapes: a 1 MB answer of ordinary findings, objects nested N deep at top
//! level, inside the list and inside a description, and a run of `{`.
//!   cargo bench --bench findings

use std::time::Duration;

fn thread_cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    Duration::from_secs(ru.ru_utime.tv_sec as u64 + ru.ru_stime.tv_sec as u64)
        + Duration::from_micros(ru.ru_utime.tv_usec as u64 + ru.ru_stime.tv_usec as u64)
}

fn nested(depth: usize) -> String {
    format!(
        "{}{}",
        "{\"a\":".repeat(depth),
        "1".to_string() + &"}".repeat(depth)
    )
}

fn shapes(depth: usize) -> Vec<(String, String)> {
    let one = r#"{"severity": "high", "confidence": "high", "title": "SQL injection in the query builder", "description": "user input reaches the query text unescaped; an attacker can read every table", "line": 12}"#;
    let n = 1_000_000 / (one.len() + 1);
    let big = format!(
        "```json\n{{\"findings\": [{}]}}\n```",
        vec![one; n].join(",")
    );
    let deep = nested(depth);
    vec![
        ("1 MB of findings".into(), big),
        (format!("{depth} deep at top level"), deep.clone()),
        (
            format!("{depth} deep in the list"),
            format!("{{\"findings\": [{deep}]}}"),
        ),
        (
            format!("{depth} deep in a description"),
            format!(
                "{{\"findings\": [{{\"severity\": \"high\", \"title\": \"t\", \"line\": 3, \"description\": {deep}}}]}}"
            ),
        ),
        (format!("{depth} of `{{`"), "{".repeat(depth)),
    ]
}

fn main() {
    let depths: Vec<usize> = std::env::var("DEPTHS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    println!(
        "{:<34} {:>10} {:>12} {:>10}",
        "answer", "bytes", "CPU", "MB/s"
    );
    let mut seen = std::collections::HashSet::new();
    for depth in depths {
        for (label, answer) in shapes(depth) {
            if !seen.insert(label.clone()) {
                continue;
            }
            let before = thread_cpu();
            let got = warden::findings::extract(&answer, 1, 100);
            let cpu = thread_cpu() - before;
            let verdict = match &got {
                Ok(e) => format!("{} kept", e.findings.len()),
                Err(_) => "bad_response".into(),
            };
            println!(
                "{label:<34} {:>10} {:>10.1}ms {:>10.1}  {verdict}",
                answer.len(),
                cpu.as_secs_f64() * 1000.0,
                answer.len() as f64 / cpu.as_secs_f64().max(1e-9) / 1e6
            );
        }
    }
}
