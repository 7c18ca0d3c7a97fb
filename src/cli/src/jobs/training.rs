// SPDX-License-Identifier: GPL-3.0-or-later
//! The lines `job show` adds for a training: its machines, what the planner predicted, where
//! it stands, which machine slows its steps, and what was measured.

use partagpu_core::job::record::JobPart;
use partagpu_core::job::training::TrainingReport;

/// One line per part: "lab-3 (node 2, 1 process): lost".
pub fn render_parts(parts: &[JobPart]) -> String {
    parts
        .iter()
        .map(|p| {
            let processes = if p.processes == 1 { "process" } else { "processes" };
            format!(
                "Part:      {} (node {}, {} {processes}): {}\n",
                p.node_name, p.node_rank, p.processes, p.state
            )
        })
        .collect()
}

/// The report's lines, each only when the training said it.
pub fn render_training(t: &TrainingReport) -> String {
    let mut out = String::new();
    if let Some(prediction) = &t.prediction {
        out.push_str(&format!("Plan:      {prediction}\n"));
    }
    if let (Some(step_s), Some(world_size)) = (t.step_s, t.world_size) {
        let strategy = t.strategy.as_deref().unwrap_or("none");
        out.push_str(&format!(
            "Steps:     {} optimizer steps, {step_s:.2} s each lately ({world_size} processes, strategy {strategy})\n",
            t.steps
        ));
    }
    if t.windows > 0 {
        let now = t.slowest.as_ref().map_or_else(
            || "none lately (every machine within 10 % of the median)".to_owned(),
            |s| {
                format!(
                    "{} lately, {} % slower than the median ({})",
                    s.machine, s.excess_percent, s.compared
                )
            },
        );
        out.push_str(&format!("Slowest:   {now}\n"));
        if let Some(line) = slowed_steps(t) {
            out.push_str(&format!("           {line}\n"));
        }
    }
    if let Some(measured) = &t.measured {
        out.push_str(&format!("Measured:  {measured}\n"));
    }
    out
}

/// "lab-3 slowed 22 of 40 steps (lab-2 7, lab-1 2)", or that none did, once steps were
/// compared one by one.
fn slowed_steps(t: &TrainingReport) -> Option<String> {
    if t.compared_steps == 0 {
        return None;
    }
    let ranking = t.slowed_ranking();
    let Some(((machine, count), others)) = ranking.split_first() else {
        return Some(match t.compared_steps {
            1 => "no machine slowed the one step compared".to_owned(),
            n => format!("no machine slowed any of the {n} steps compared"),
        });
    };
    let steps = if t.compared_steps == 1 { "step" } else { "steps" };
    let mut line = format!("{machine} slowed {count} of {} {steps}", t.compared_steps);
    if !others.is_empty() {
        let others: Vec<String> = others.iter().map(|(m, n)| format!("{m} {n}")).collect();
        line.push_str(&format!(" ({})", others.join(", ")));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use partagpu_core::job::training::{parse_line, REPORT_PREFIX};

    #[test]
    fn a_training_shows_its_plan_its_steps_and_its_straggler() {
        let mut t = TrainingReport::default();
        assert_eq!(render_training(&t), "");
        for body in [
            r#"{"kind":"plan","text":"predicted 2.7× on 3 machines with 8-step accumulation"}"#,
            r#"{"kind":"window","step":10,"step_s":0.9,"world_size":3,"strategy":"accumulate8","slowest":{"machine":"lab-3","excess_percent":23,"compared":"forward pass"},"compared_steps":10,"slowed_steps":{"lab-3":8,"lab-1":1}}"#,
            r#"{"kind":"window","step":20,"step_s":0.84,"world_size":3,"strategy":"accumulate8","slowest":{"machine":"lab-3","excess_percent":31,"compared":"forward pass"},"compared_steps":10,"slowed_steps":{"lab-3":9,"lab-2":1}}"#,
        ] {
            t.apply(parse_line(&format!("{REPORT_PREFIX}{body}")).unwrap().unwrap());
        }
        assert_eq!(
            render_training(&t),
            "Plan:      predicted 2.7× on 3 machines with 8-step accumulation\n\
             Steps:     20 optimizer steps, 0.84 s each lately (3 processes, strategy accumulate8)\n\
             Slowest:   lab-3 lately, 31 % slower than the median (forward pass)\n\
             \x20          lab-3 slowed 17 of 20 steps (lab-1 1, lab-2 1)\n"
        );
        let even = r#"{"kind":"window","step":30,"step_s":0.8,"world_size":3,"strategy":"accumulate8"}"#;
        t.apply(parse_line(&format!("{REPORT_PREFIX}{even}")).unwrap().unwrap());
        assert!(render_training(&t).contains("Slowest:   none lately"));
    }

    #[test]
    fn steps_compared_that_no_machine_slowed_are_said_so() {
        let mut t = TrainingReport::default();
        let even =
            r#"{"kind":"window","step":1,"step_s":0.8,"world_size":2,"strategy":"none","compared_steps":1}"#;
        t.apply(parse_line(&format!("{REPORT_PREFIX}{even}")).unwrap().unwrap());
        assert!(render_training(&t).ends_with(
            "Slowest:   none lately (every machine within 10 % of the median)\n\
             \x20          no machine slowed the one step compared\n"
        ));
        t.slowed_steps.insert("lab-2".into(), 1);
        assert!(render_training(&t).ends_with("           lab-2 slowed 1 of 1 step\n"));
    }
}
