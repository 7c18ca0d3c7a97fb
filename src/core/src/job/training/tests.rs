// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

/// A window of 10 steps: its slowest machine with its excess, and the steps each machine slowed.
fn window(step: u64, slowest: Option<(&str, u32)>, slowed: &[(&str, u32)]) -> String {
    let slowest = slowest.map_or("null".to_owned(), |(machine, excess)| {
        format!(r#"{{"machine":"{machine}","excess_percent":{excess},"compared":"forward pass"}}"#)
    });
    let slowed: Vec<String> = slowed.iter().map(|(m, n)| format!(r#""{m}":{n}"#)).collect();
    format!(
        r#"{REPORT_PREFIX}{{"kind":"window","step":{step},"step_s":0.84,"world_size":3,"strategy":"fp16+accumulate8","slowest":{slowest},"compared_steps":10,"slowed_steps":{{{}}}}}"#,
        slowed.join(",")
    )
}

#[test]
fn reports_fold_into_the_training_and_count_who_was_slowest() {
    let mut report = TrainingReport::default();
    let lines = [
        format!(r#"{REPORT_PREFIX}{{"kind":"plan","text":"predicted 2.7× on 3 machines"}}"#),
        window(10, Some(("lab-3", 23)), &[("lab-3", 9)]),
        window(20, Some(("lab-2", 12)), &[("lab-2", 6), ("lab-3", 3)]),
        window(30, Some(("lab-3", 31)), &[("lab-3", 10)]),
        window(40, None, &[("lab-1", 2), ("lab-2", 1)]),
        format!(r#"{REPORT_PREFIX}{{"kind":"measured","text":"measured 2.4× on 3 machines"}}"#),
    ];
    for line in &lines {
        report.apply(parse_line(line).unwrap().expect("a report"));
    }
    assert_eq!(report.prediction.as_deref(), Some("predicted 2.7× on 3 machines"));
    assert_eq!(report.measured.as_deref(), Some("measured 2.4× on 3 machines"));
    assert_eq!(
        (report.steps, report.windows, report.world_size),
        (40, 4, Some(3))
    );
    assert_eq!(report.strategy.as_deref(), Some("fp16+accumulate8"));
    assert_eq!(report.slowest, None, "the last window had no straggler");
    assert_eq!(report.compared_steps, 40);
    assert_eq!(report.usual_straggler(), Some(("lab-3", 22)));
    let slowed: Vec<(&str, u64)> = report
        .slowed_steps
        .iter()
        .map(|(m, n)| (m.as_str(), *n))
        .collect();
    assert_eq!(slowed, [("lab-1", 2), ("lab-2", 7), ("lab-3", 22)]);
}

#[test]
fn a_machine_is_the_usual_straggler_only_when_it_slowed_most_steps() {
    let mut report = TrainingReport::default();
    let even = window(10, None, &[("lab-1", 3), ("lab-2", 4), ("lab-3", 3)]);
    report.apply(parse_line(&even).unwrap().unwrap());
    assert_eq!(report.usual_straggler(), None);
    assert_eq!(
        report.slowed_ranking(),
        [("lab-2", 4), ("lab-1", 3), ("lab-3", 3)]
    );
    report.apply(parse_line(&window(20, None, &[("lab-2", 7)])).unwrap().unwrap());
    assert_eq!(report.usual_straggler(), Some(("lab-2", 11)));
}

#[test]
fn a_window_from_a_helper_that_does_not_compare_steps_still_reads() {
    let older = r#"{"kind":"window","step":10,"step_s":0.9,"world_size":2,"strategy":"none"}"#;
    let mut report = TrainingReport::default();
    report.apply(parse_line(&format!("{REPORT_PREFIX}{older}")).unwrap().unwrap());
    assert_eq!((report.windows, report.compared_steps), (1, 0));
    assert_eq!(report.usual_straggler(), None);
}

#[test]
fn slowed_steps_must_name_machines_and_fit_in_the_steps_compared() {
    let over = window(10, None, &[("lab-2", 6), ("lab-3", 5)]);
    assert_eq!(parse_line(&over), Err(ReportError::OutOfBounds("slowed_steps")));
    let nameless = window(10, None, &[("", 1)]);
    assert_eq!(
        parse_line(&nameless),
        Err(ReportError::OutOfBounds("slowed_steps"))
    );
    let control = window(10, None, &[("lab\\u001b[2J", 1)]);
    assert_eq!(
        parse_line(&control),
        Err(ReportError::OutOfBounds("slowed_steps"))
    );
    let huge = window(10, None, &[]).replace(
        "\"compared_steps\":10",
        &format!("\"compared_steps\":{}", MAX_WINDOW_STEPS + 1),
    );
    assert_eq!(parse_line(&huge), Err(ReportError::OutOfBounds("compared_steps")));
    assert!(parse_line(&window(10, None, &[("lab-2", 6), ("lab-3", 4)])).is_ok());
}

#[test]
fn other_lines_are_not_reports_and_bad_reports_are_refused() {
    assert_eq!(parse_line("epoch 1/8: loss 0.71"), Ok(None));
    assert_eq!(parse_line("partagpu: predicted 2.7×"), Ok(None));
    assert!(matches!(
        parse_line(&format!("{REPORT_PREFIX}{{\"kind\":\"reformat\"}}")),
        Err(ReportError::Malformed(_))
    ));
    assert!(matches!(
        parse_line(&format!("{REPORT_PREFIX}not json")),
        Err(ReportError::Malformed(_))
    ));
    let long = format!(
        r#"{REPORT_PREFIX}{{"kind":"plan","text":"{}"}}"#,
        "x".repeat(MAX_REPORT_LINE)
    );
    assert_eq!(parse_line(&long), Err(ReportError::TooLong));
    let wordy = format!(
        r#"{REPORT_PREFIX}{{"kind":"plan","text":"{}"}}"#,
        "x".repeat(MAX_REPORT_TEXT + 1)
    );
    assert_eq!(parse_line(&wordy), Err(ReportError::OutOfBounds("text")));
    let control = format!(r#"{REPORT_PREFIX}{{"kind":"measured","text":"a\u001b[2Jb"}}"#);
    assert_eq!(parse_line(&control), Err(ReportError::OutOfBounds("text")));
    let zero = window(1, None, &[]).replace("\"world_size\":3", "\"world_size\":0");
    assert_eq!(parse_line(&zero), Err(ReportError::OutOfBounds("world_size")));
    let negative = window(1, None, &[]).replace("0.84", "-1");
    assert_eq!(parse_line(&negative), Err(ReportError::OutOfBounds("step_s")));
    let nameless = window(1, Some(("", 20)), &[]);
    assert_eq!(parse_line(&nameless), Err(ReportError::OutOfBounds("slowest")));
}

#[test]
fn the_count_of_machines_is_bounded() {
    let mut report = TrainingReport::default();
    for i in 0..(MAX_MACHINES + 10) {
        let name = format!("m{i}");
        report.apply(
            parse_line(&window(1, Some((&name, 20)), &[(&name, 1)]))
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(report.slowed_steps.len(), MAX_MACHINES);
    assert_eq!(report.windows as usize, MAX_MACHINES + 10);
    assert_eq!(report.slowest.as_ref().map(|s| s.machine.as_str()), Some("m265"));
}

#[test]
fn a_record_without_a_report_reads_and_an_old_report_misses_no_key() {
    let report: TrainingReport = serde_json::from_str("{}").unwrap();
    assert_eq!(report, TrainingReport::default());
}
