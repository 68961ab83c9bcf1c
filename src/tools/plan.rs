//! When a unit loops (docs/design.md §14): a skill whose tools (its `[[skills]] tools`, else
//! its front matter's `allowed-tools`) name Warden's `Read`, `Grep` or `Glob`, or any
//! skill under `[execution] tools = true`; never under `tools = false` / `--no-tools`.
//! Tools warden does not run (`Bash`, `Write`, `Edit`, web tools, anything unknown) are
//! refused with one warning per skill: warden's tools only read the reviewed tree.

use super::Tool;
use crate::config::{BUILT_IN_MAX_TURNS, Execution, ToolsMode};
use crate::skills::{ActiveSkill, SkillOrigin};

/// What a unit's loop may use: the tools its skills allow and its turn cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPlan {
    /// The tools offered (`submit_findings` is always offered besides).
    pub tools: Vec<Tool>,
    /// Requests at most, the final (tools off) one included; 1 is a single request.
    pub max_turns: u32,
}

/// The skill's tool names as configured: `[[skills]] tools` over `allowed-tools`.
fn names(a: &ActiveSkill) -> &[String] {
    a.config.tools.as_deref().unwrap_or(&a.skill.allowed_tools)
}

/// The loop of a unit of `skills` (consolidated skills share one: the union of their
/// tools, the smallest turn cap), or None for a single request.
pub fn loop_for(skills: &[&ActiveSkill], exec: &Execution) -> Option<LoopPlan> {
    if exec.tools == ToolsMode::Off || skills.is_empty() {
        return None;
    }
    let mut tools: Vec<Tool> = skills
        .iter()
        .flat_map(|a| names(a).iter().filter_map(|n| Tool::from_skill_name(n)))
        .collect();
    if tools.is_empty() && exec.tools == ToolsMode::All {
        tools = Tool::ALL.to_vec();
    }
    tools.sort();
    tools.dedup();
    if tools.is_empty() {
        return None;
    }
    let max_turns = skills.iter().map(|a| turns_of(a, exec)).min()?;
    (max_turns > 1).then_some(LoopPlan { tools, max_turns })
}

/// A skill's turn cap: its own, else `[execution] maxTurns` when set, else the built-in
/// skills' small loop or the default.
fn turns_of(a: &ActiveSkill, exec: &Execution) -> u32 {
    let b = exec.tool_bounds;
    a.config.max_turns.unwrap_or(
        if !b.max_turns_set && a.skill.origin == SkillOrigin::BuiltIn {
            BUILT_IN_MAX_TURNS.min(b.max_turns)
        } else {
            b.max_turns
        },
    )
}

/// One warning per skill that lists tools warden does not run.
pub fn refused_tools(skills: &[ActiveSkill]) -> Vec<String> {
    skills
        .iter()
        .filter_map(|a| {
            let refused: Vec<String> = names(a)
                .iter()
                .filter(|n| Tool::from_skill_name(n).is_none())
                .map(|n| format!("`{}`", crate::text::escape::inline(n)))
                .collect();
            (!refused.is_empty()).then(|| {
                format!(
                    "skill `{}`: allowed tools {} are not run (warden's tools only read the reviewed tree: Read, Grep, Glob); the skill runs without them",
                    crate::text::escape::inline(&a.skill.name),
                    refused.join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SkillConfig;
    use crate::skills::Skill;

    fn active(tools: &[&str], origin: SkillOrigin) -> ActiveSkill {
        ActiveSkill {
            skill: Skill {
                name: "s".into(),
                description: String::new(),
                allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
                prompt: "p".into(),
                origin,
            },
            config: SkillConfig::named("s"),
            thresholds: crate::config::Settings::default().thresholds(&SkillConfig::named("s")),
        }
    }

    #[test]
    fn skills_that_list_read_tools_loop_and_the_rest_do_not() {
        let e = Execution::default();
        let repo = SkillOrigin::Repo("x".into());
        let a = active(&["Read", "Grep", "Bash"], repo.clone());
        let p = loop_for(&[&a], &e).unwrap();
        assert_eq!(p.tools, [Tool::ReadFile, Tool::Grep]);
        assert_eq!(p.max_turns, 8);
        assert_eq!(refused_tools(std::slice::from_ref(&a)).len(), 1);
        assert!(refused_tools(std::slice::from_ref(&a))[0].contains("`Bash`"));
        let none = active(&[], repo.clone());
        assert_eq!(loop_for(&[&none], &e), None);
        let only_bash = active(&["Bash", "Write"], repo);
        assert_eq!(loop_for(&[&only_bash], &e), None);
        // Built-in skills loop with a small cap unless maxTurns is set.
        let b = active(&["Read", "Grep", "Glob"], SkillOrigin::BuiltIn);
        assert_eq!(loop_for(&[&b], &e).unwrap().max_turns, BUILT_IN_MAX_TURNS);
        let mut set = e;
        set.tool_bounds.max_turns = 6;
        set.tool_bounds.max_turns_set = true;
        assert_eq!(loop_for(&[&b], &set).unwrap().max_turns, 6);
        // tools = true: every skill; tools = false / --no-tools: none; maxTurns 1: none.
        let mut all = e;
        all.tools = ToolsMode::All;
        assert_eq!(loop_for(&[&none], &all).unwrap().tools, Tool::ALL);
        let mut off = e;
        off.tools = ToolsMode::Off;
        assert_eq!(loop_for(&[&b], &off), None);
        let mut one = b.clone();
        one.config.max_turns = Some(1);
        assert_eq!(loop_for(&[&one], &e), None);
    }
}
