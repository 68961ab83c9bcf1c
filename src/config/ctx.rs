//! The context every section's resolver takes: the file being read, its text (for the
//! line and column of an error) and where its relative paths are read from. A leaf of the
//! folder: `resolve.rs` builds one and hands it to each section (`routes.rs`, `cache.rs`,
//! `tools.rs`, ...), so the sections never import the resolver.

use super::place::{ConfigPlace, line_col};
use super::raw::S;
use crate::error::Error;
use crate::path_rules::PathRules;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// The file being resolved, for errors that name its line and column.
pub(super) struct Ctx<'a> {
    pub path: &'a Path,
    pub src: &'a str,
    pub beside: &'a super::Beside<'a>,
}

impl Ctx<'_> {
    pub(crate) fn err_at(&self, offset: usize, message: impl Into<String>) -> Error {
        let (line, column) = line_col(self.src, offset);
        Error::Config {
            path: self.path.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }

    /// Where `value` is written, for an error found after loading.
    pub fn place<T>(&self, value: &S<T>) -> ConfigPlace {
        let (line, column) = line_col(self.src, value.span().start);
        ConfigPlace {
            path: self.path.to_path_buf(),
            line,
            column,
        }
    }

    pub fn err<T>(&self, value: &S<T>, message: impl Into<String>) -> Error {
        self.err_at(value.span().start, message)
    }

    pub fn parse<T: FromStr<Err: std::fmt::Display>>(
        &self,
        v: &S<String>,
        key: &str,
    ) -> Result<T, Error> {
        v.get_ref()
            .parse::<T>()
            .map_err(|e| self.err(v, format!("{key}: {e}")))
    }

    pub fn duration(
        &self,
        v: &Option<S<String>>,
        key: &str,
        default: Duration,
    ) -> Result<Duration, Error> {
        let Some(v) = v else { return Ok(default) };
        super::parse_duration(v.get_ref()).map_err(|e| self.err(v, format!("{key}: {e}")))
    }

    pub fn rules(&self, v: &S<Vec<String>>, key: &str) -> Result<PathRules, Error> {
        PathRules::new(v.get_ref()).map_err(|(i, why)| {
            self.err(
                v,
                format!(
                    "{key}: invalid glob `{}`: {why}",
                    v.get_ref().get(i).map(String::as_str).unwrap_or("")
                ),
            )
        })
    }

    /// An amount of US dollars: finite and not negative.
    pub fn usd(&self, v: &S<f64>, key: &str) -> Result<f64, Error> {
        let x = *v.get_ref();
        if !(x.is_finite() && x >= 0.0) {
            return Err(self.err(
                v,
                format!("{key}: must be an amount in US dollars, 0 or more (for example 2.50)"),
            ));
        }
        Ok(x)
    }

    pub fn positive(&self, v: &S<u32>, key: &str) -> Result<u32, Error> {
        if *v.get_ref() == 0 {
            return Err(self.err(v, format!("{key}: must be at least 1")));
        }
        Ok(*v.get_ref())
    }
}
