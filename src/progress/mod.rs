//! Progress on stderr, fed by engine events: indicatif bars when stderr is a terminal,
//! plain timestamped lines at most every few seconds otherwise (CI logs), nothing with -q.
//! With -v, retries, failovers, breaker changes and units that were not reviewed are
//! printed as they happen.

mod waits;

use crate::engine::{BreakerState, Event, Pass, Sink, UnitStatus};
use crate::text::escape;
use console::style;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use waits::Waits;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing (`-q`).
    Quiet,
    /// Plain timestamped lines (stderr is not a terminal).
    Plain,
    /// indicatif bars (stderr is a terminal).
    Bars,
}

impl Mode {
    /// The mode for this process: quiet if asked, bars on a terminal, else plain lines.
    pub fn detect(quiet: bool) -> Mode {
        use std::io::IsTerminal;
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Plain
        }
    }
}

/// Plain lines are printed at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// A plain line that would say what the last one said (clocks aside) waits this long:
/// a hanging provider gives a line every half minute, not 36 identical ones.
const SAME_EVERY: Duration = Duration::from_secs(30);

struct State {
    start: Instant,
    budget: Duration,
    total: usize,
    done: BTreeMap<UnitStatus, usize>,
    routes: Vec<(String, usize)>,
    in_flight: BTreeMap<String, usize>,
    breakers: BTreeMap<String, BreakerState>,
    last_line: Option<Instant>,
    /// The last plain line without its clocks (identical consecutive lines collapse).
    last_key: Option<String>,
    /// Each unit of the pass by file:lines and skill, for the lines about it.
    names: BTreeMap<usize, String>,
    /// What units that are not in flight wait for.
    waits: Waits,
    /// The review pass has started: totals, routes and the budget are known. Before
    /// that, a status line would read "0/0 units · budget left 0s".
    started: bool,
}

impl State {
    /// Takes in what an event emitted at `at` changes; returns a line worth telling, if any.
    fn apply(&mut self, e: &Event, at: Instant) -> Option<String> {
        self.waits.apply(e, at);
        match e {
            Event::PassStarted {
                pass,
                units,
                budget,
                routes,
            } => {
                self.total += units;
                self.names.clear();
                if *pass == Pass::Review {
                    self.started = true;
                    self.budget = *budget;
                    self.routes = routes
                        .iter()
                        .map(|r| (r.name.clone(), r.max_concurrency))
                        .collect();
                }
                None
            }
            Event::UnitQueued { unit, info } => {
                let (a, b) = info.lines;
                let name = format!("{}:{a}-{b} ({})", info.labels.path, info.labels.skill);
                self.names.insert(*unit, name);
                None
            }
            Event::AttemptStarted { route, .. } => {
                *self.in_flight.entry(route.clone()).or_default() += 1;
                None
            }
            Event::AttemptFinished { record, .. } => {
                if let Some(n) = self.in_flight.get_mut(&record.route) {
                    *n = n.saturating_sub(1);
                }
                None
            }
            Event::UnitFinished { unit, result } => {
                *self.done.entry(result.status).or_default() += 1;
                (result.status != UnitStatus::Reviewed).then(|| {
                    let name = self.name(*unit);
                    format!("{name} {}: {}", result.status.as_str(), result.reason)
                })
            }
            Event::Breaker { route, to, .. } => {
                self.breakers.insert(route.clone(), *to);
                note(e, |u| self.name(u))
            }
            _ => note(e, |u| self.name(u)),
        }
    }

    /// A unit as people know it: `src/auth.py:10-42 (security-review)`, or its index
    /// when the pass did not say (a unit of an earlier pass).
    fn name(&self, unit: usize) -> String {
        self.names
            .get(&unit)
            .cloned()
            .unwrap_or_else(|| format!("unit {unit}"))
    }

    fn done(&self) -> usize {
        self.done.values().sum()
    }

    /// The status line; `counted` leads with "done/total units done" (plain lines), a
    /// bar shows those figures itself.
    fn line(&self, counted: bool) -> String {
        self.line_and_key(counted).0
    }

    /// The status line, and the same without its clocks: two lines with one key say the
    /// same thing.
    fn line_and_key(&self, counted: bool) -> (String, String) {
        let elapsed = self.start.elapsed();
        let reviewed = self.done.get(&UnitStatus::Reviewed).copied().unwrap_or(0);
        let not = self.done() - reviewed;
        let routes: Vec<String> = self
            .routes
            .iter()
            .map(|(name, cap)| {
                let b = self
                    .breakers
                    .get(name)
                    .copied()
                    .unwrap_or(BreakerState::Closed);
                format!(
                    "{} {}/{cap} {}",
                    escape::inline(name),
                    self.in_flight.get(name).copied().unwrap_or(0),
                    b.label()
                )
            })
            .collect();
        let left = self.budget.saturating_sub(elapsed);
        let count = if counted {
            format!("{}/{} units done ", self.done(), self.total)
        } else {
            String::new()
        };
        let head = format!(
            "{count}({reviewed} reviewed, {not} not) · {}",
            routes.join(" · ")
        );
        let waits = self.waits.said(Instant::now());
        let (wait_text, wait_key) = waits.map_or((String::new(), String::new()), |w| {
            (format!(" · {}", w.text), w.key)
        });
        let line = format!(
            "{head} · budget left {}{wait_text}",
            crate::config::format_duration(Duration::from_secs(left.as_secs()))
        );
        (line, format!("{head}|{wait_key}"))
    }
}

/// The line an event is worth (retries, failovers, breaker changes, budget expiry); units
/// are named by `name`.
fn note(e: &Event, name: impl Fn(usize) -> String) -> Option<String> {
    match e {
        Event::Breaker {
            route, to, reason, ..
        } => Some(format!("route {route} -> {}: {reason}", to.label())),
        Event::Failover {
            unit,
            from,
            to,
            reason,
        } => Some(format!(
            "{} fails over {from} -> {to} after {reason}",
            name(*unit)
        )),
        Event::Retry {
            unit,
            route,
            reason,
            wait,
        } => Some(format!(
            "{} retries {route} in {} after {reason}",
            name(*unit),
            crate::config::format_duration(*wait)
        )),
        Event::BudgetExpired { in_flight } => Some(format!(
            "review budget ran out: cancelling {in_flight} attempts in flight"
        )),
        Event::Warning { route, message } => Some(format!("warning: route `{route}`: {message}")),
        _ => None,
    }
}

/// The progress display: an event consumer (see [`Progress::sink`]).
pub struct Progress {
    mode: Mode,
    verbose: bool,
    state: Arc<Mutex<State>>,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A display in `mode`; with `verbose`, retries, failovers and units not reviewed are
    /// printed as they happen. Totals, routes and the budget come from the events.
    pub fn new(mode: Mode, verbose: bool) -> Self {
        let bar = (mode == Mode::Bars).then(|| {
            // Hidden until the review pass starts (see `refresh`): a bar drawn before it
            // would show a full "0/0 units".
            let b = indicatif::ProgressBar::with_draw_target(
                Some(0),
                indicatif::ProgressDrawTarget::hidden(),
            );
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    // wide_msg: the line is cut to the terminal's width, so a refresh
                    // redraws in place instead of scrolling.
                    "{spinner} [{elapsed_precise}] {bar:20.cyan/blue} {pos}/{len} units  {wide_msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        });
        Progress {
            mode,
            verbose,
            state: Arc::new(Mutex::new(State {
                start: Instant::now(),
                budget: Duration::ZERO,
                total: 0,
                done: BTreeMap::new(),
                routes: Vec::new(),
                in_flight: BTreeMap::new(),
                breakers: BTreeMap::new(),
                last_line: None,
                last_key: None,
                names: BTreeMap::new(),
                waits: Waits::default(),
                started: false,
            })),
            bar,
        }
    }

    fn say(&self, text: String) {
        match &self.bar {
            Some(b) => b.println(text),
            None => {
                let elapsed = self.state.lock().expect("progress").start.elapsed();
                crate::text::stdio::eprint_line(&format!(
                    "[{:>7.1}s] {text}",
                    elapsed.as_secs_f64()
                ));
            }
        }
    }

    /// Takes in an event emitted at `at`, then redraws.
    fn on_event(&self, e: &Event, at: Instant) {
        if self.mode == Mode::Quiet {
            return;
        }
        let note = {
            let mut st = self.state.lock().expect("progress");
            let total = st.total;
            let note = st.apply(e, at);
            if st.total != total
                && let Some(b) = &self.bar
            {
                b.set_length(st.total as u64);
            }
            note
        };
        let important = matches!(
            e,
            Event::Breaker { .. } | Event::BudgetExpired { .. } | Event::Warning { .. }
        );
        if let Some(n) = note
            && (self.verbose || important)
        {
            // Reasons carry provider text: one escaped line each.
            self.say(
                style(crate::text::escape::inline(&n))
                    .dim()
                    .for_stderr()
                    .to_string(),
            );
        }
        // Every event, ticks included, redraws the clocks.
        self.refresh(false);
    }

    /// Redraws the bar, or prints a plain line if enough time has passed (or `force`).
    /// Nothing is drawn before the review pass starts: there is nothing true to say yet.
    pub fn refresh(&self, force: bool) {
        let mut st = self.state.lock().expect("progress");
        if !st.started {
            return;
        }
        match (&self.bar, self.mode) {
            (Some(b), _) => {
                if b.is_hidden() {
                    b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    b.enable_steady_tick(Duration::from_millis(120));
                }
                b.set_position(st.done() as u64);
                b.set_message(st.line(false));
            }
            (None, Mode::Plain) => {
                let (line, key) = st.line_and_key(true);
                // A line that says what the last one said waits longer.
                let every = if st.last_key.as_deref() == Some(key.as_str()) {
                    SAME_EVERY
                } else {
                    PLAIN_EVERY
                };
                let due = st.last_line.is_none_or(|t| t.elapsed() >= every);
                if due || force {
                    st.last_line = Some(Instant::now());
                    st.last_key = Some(key);
                    let elapsed = st.start.elapsed();
                    drop(st);
                    // Cut to COLUMNS (or a terminal's width): one line per refresh.
                    crate::text::stdio::eprint_line(&crate::text::wrap::truncate(
                        &format!("[{:>7.1}s] {line}", elapsed.as_secs_f64()),
                        crate::text::wrap::stderr_columns(),
                    ));
                }
            }
            _ => {}
        }
    }

    /// This display as an event consumer.
    pub fn sink(self: &Arc<Self>) -> Sink {
        let me = self.clone();
        Sink::new(move |s| me.on_event(&s.event, s.at.into_std()))
    }

    /// Clears the bars, or prints a last plain line.
    pub fn finish(&self) {
        match &self.bar {
            Some(b) => b.finish_and_clear(),
            None => {
                if self.mode == Mode::Plain {
                    self.refresh(true);
                }
            }
        }
    }
}
