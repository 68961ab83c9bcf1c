//! The starter config written by `warden init`.

/// A sim route that works with no key, and real routes to uncomment.
pub const STARTER: &str = r#"# warden configuration (a Warden v1 file; see warden.toml.example for every key)
version = 1

[defaults]
failOn = "high"          # exit 1 on a finding at or above this severity (or "off")
reportOn = "low"         # show findings at or above this severity
minConfidence = "medium"
ignorePaths = []         # gitignore style, e.g. ["docs/**", "!docs/api.md"]

[execution]
reviewBudget = "15m"     # the whole run
hunkBudget = "5m"        # one unit, all its attempts
requestTimeout = "2m"    # one request
maxAttempts = 2

# Routes in failover order. The sim route needs no key and no network: try warden with
# it, then replace it with real routes like the commented ones below.
[[routes]]
name = "sim"
provider = "sim"
profile = "healthy"      # healthy | slow-tail | outage | flaky | rate-limited
timeScale = 60           # one simulated minute per second

# [[routes]]
# name = "primary"
# provider = "openrouter"
# model = "moonshotai/kimi-k2.6"
# apiKeyEnv = "OPENROUTER_API_KEY"
# maxConcurrency = 4
#
# [[routes]]
# name = "fallback"
# provider = "anthropic"
# model = "claude-sonnet-4-5"
# apiKeyEnv = "ANTHROPIC_API_KEY"
# maxConcurrency = 2
"#;
