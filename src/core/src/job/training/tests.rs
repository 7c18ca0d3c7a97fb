// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn window(step: u64, slowest: Option<(&str, u32)>) -> String {
    let slowest = slowest.map_or("null".to_owned(), |(machine, excess)| {
        format!(r#"{{"machine":"{machine}","excess_percent":{excess},"compared":"forward pass"}}"#)
    });
    format!(
        r#"{REPORT_PREFIX}{{"kind":"window","step":{step},"step_s":0.84,"world_size":3,"strategy":"fp16+accumulate8","slowest":{slowest}}}"#
    )
}

#[test]
fn reports_fold_into_the_training_and_count_who_was_slowest() {
    let mut report = TrainingReport::default();
    let lines = [
        format!(r#"{REPORT_PREFIX}{{"kind":"plan","text":"predicted 2.7× on 3 machines"}}"#),
        window(10, Some(("lab-3", 23))),
        window(20, Some(("lab-2", 12))),
        window(30, Some(("lab-3", 31))),
        window(40, None),
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
    assert_eq!(report.usual_straggler(), Some(("lab-3", 2)));
    assert_eq!(report.slowest_counts.get("lab-2"), Some(&1));
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
    let zero = window(1, None).replace("\"world_size\":3", "\"world_size\":0");
    assert_eq!(parse_line(&zero), Err(ReportError::OutOfBounds("world_size")));
    let negative = window(1, None).replace("0.84", "-1");
    assert_eq!(parse_line(&negative), Err(ReportError::OutOfBounds("step_s")));
    let nameless = window(1, Some(("", 20)));
    assert_eq!(parse_line(&nameless), Err(ReportError::OutOfBounds("slowest")));
}

#[test]
fn the_count_of_machines_is_bounded() {
    let mut report = TrainingReport::default();
    for i in 0..(MAX_MACHINES + 10) {
        let name = format!("m{i}");
        report.apply(parse_line(&window(1, Some((&name, 20)))).unwrap().unwrap());
    }
    assert_eq!(report.slowest_counts.len(), MAX_MACHINES);
    assert_eq!(report.windows as usize, MAX_MACHINES + 10);
    assert_eq!(report.slowest.as_ref().map(|s| s.machine.as_str()), Some("m265"));
}

#[test]
fn a_record_without_a_report_reads_and_an_old_report_misses_no_key() {
    let report: TrainingReport = serde_json::from_str("{}").unwrap();
    assert_eq!(report, TrainingReport::default());
}
