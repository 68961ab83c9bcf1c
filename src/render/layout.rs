//! How the text report is laid out: the width its lines wrap to, and whether the route
//! table is the full one or the compact one (under [`WIDE`] columns, unless `-v`).

/// Below this many columns the route table is the compact one (unless `-v`).
pub const WIDE: usize = 100;

/// The narrowest width wrapped to: a narrower terminal (or `COLUMNS`) gets this many.
const MIN_WIDTH: usize = 40;

/// How the text report is laid out: the width its lines wrap to (None: not wrapped) and
/// whether the full route table is asked for (`-v`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// Columns; None writes every line whole (a file, a pipe, a CI log).
    pub width: Option<usize>,
    /// `-v`: the full route table at any width.
    pub verbose: bool,
}

impl Layout {
    /// The layout for stdout. `COLUMNS` wins when set (as for most terminal programs);
    /// else a terminal's width; else no wrapping: a pipe, a file or a CI log viewer wraps
    /// on its own, and tools that read the text (grep, ripgrep, log search) see each line
    /// whole. ripgrep never wraps; cargo-nextest sizes only its progress bar to the
    /// terminal and writes whole lines otherwise.
    pub fn for_stdout(verbose: bool) -> Layout {
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0);
        let term = console::Term::stdout();
        let width = columns.or_else(|| {
            term.is_term()
                .then(|| term.size_checked().map(|(_, cols)| usize::from(cols)))
                .flatten()
        });
        Layout {
            width: width.map(|w| w.max(MIN_WIDTH)),
            verbose,
        }
    }

    /// A layout of `width` columns.
    pub fn at(width: usize, verbose: bool) -> Layout {
        Layout {
            width: Some(width.max(MIN_WIDTH)),
            verbose,
        }
    }

    /// Every column of the route table: with `-v`, in a terminal at least [`WIDE`]
    /// columns wide, and whenever lines are not wrapped.
    pub(super) fn full_table(self) -> bool {
        self.verbose || self.width.is_none_or(|w| w >= WIDE)
    }
}
