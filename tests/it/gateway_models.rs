//! Issue 28 through a real gateway (docs/design.md §14): the pinned LiteLLM proxy in front of
//! an OpenAI reasoning deployment, whose upstream (the fake) validates as OpenAI does
//! (`max_tokens` and a `temperature` other than 1 refused with OpenAI's 400s). Under the
//! family's own name warden sends the right parameters; under an alias it cannot read a
//! family from, LiteLLM's own refusal of `temperature` is corrected once. Every unit is
//! reviewed, streamed and not.

use crate::gateway::KEY_VAR;
use crate::support::litellm::proxy;
use crate::support::*;
use serde_json::Value;

/// `review --json` of `repo` with one `litellm` route to `model` on the proxy.
fn review(repo: &Repo, model: &str, stream: bool) -> (Value, String) {
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        format!(
            "version = 1\n[execution]\nreviewBudget = \"2m\"\nhunkBudget = \"60s\"\nrequestTimeout = \"20s\"\nmaxAttempts = 1\n[[skills]]\nname = \"code-review\"\n[[routes]]\nname = \"gateway\"\nprovider = \"litellm\"\nmodel = \"{model}\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 2\nstream = {stream}\n",
            proxy().base_url()
        ),
    )
    .unwrap();
    crate::gateway::review(repo, &cfg)
}

fn every_unit_reviewed(report: &Value, label: &str, stderr: &str) {
    let units = report["units"].as_array().unwrap();
    assert!(units.len() >= 3, "{label}: {report:#}");
    assert!(
        units.iter().all(|u| u["status"] == "reviewed"),
        "{label}: {report:#}\n{stderr}"
    );
    assert_eq!(report["outcome"], "complete", "{label}");
}

/// What reached the upstream for `model`: OpenAI's reasoning parameters only.
fn upstream_as_openai_wants(model: &str) {
    let reqs = proxy().fake.requests_for(model);
    assert!(!reqs.is_empty(), "{model}: nothing reached the upstream");
    for r in reqs {
        let b = &r.body;
        assert!(b.get("max_tokens").is_none(), "{model}: {b}");
        assert!(
            b.get("temperature").is_none_or(|t| t.as_f64() == Some(1.0)),
            "{model}: {b}"
        );
        assert!(
            b["max_completion_tokens"].as_u64().is_some(),
            "{model}: {b}"
        );
    }
}

#[test]
fn a_gpt_5_deployment_through_litellm_reviews_every_unit_streamed_and_not() {
    let repo = repo_with_grown_files(3, "m", 10);
    for stream in [true, false] {
        let (report, stderr) = review(&repo, "gpt-5-mini", stream);
        every_unit_reviewed(&report, &format!("gpt-5-mini stream={stream}"), &stderr);
        assert!(!stderr.contains("refused a request parameter"), "{stderr}");
        let attempts: usize = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["attempts"].as_array().unwrap().len())
            .sum();
        assert_eq!(attempts, 3, "one attempt per unit: the family is known");
    }
    upstream_as_openai_wants("gpt-5-mini");
}

#[test]
fn an_o_series_deployment_under_an_alias_is_corrected_once_and_reviews_every_unit() {
    let repo = repo_with_grown_files(3, "r", 10);
    for stream in [true, false] {
        let (report, stderr) = review(&repo, "gw-reasoner", stream);
        every_unit_reviewed(&report, &format!("gw-reasoner stream={stream}"), &stderr);
        // The alias hides the family: warden sends temperature 0, LiteLLM refuses it for
        // o-series (its own UnsupportedParamsError), and the route drops it, once.
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("refused a request parameter"))
            .collect();
        assert_eq!(warnings.len(), 1, "stream={stream}: {stderr}");
        assert!(warnings[0].contains("`temperature`"), "{}", warnings[0]);
    }
    upstream_as_openai_wants("o4-mini");
}
