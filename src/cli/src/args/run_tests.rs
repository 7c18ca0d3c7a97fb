// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of the `run` and `job` grammar: the command after `--`, environment pairs, durations.

use super::*;

fn run_args(line: &[&str]) -> Result<RunArgs, clap::Error> {
    let args = Args::try_parse_from(["partagpuctl", "run"].iter().chain(line))?;
    match args.command {
        Command::Run(run) => Ok(run),
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn the_command_follows_the_double_dash_with_its_own_options() {
    let run = run_args(&[
        "--gpus", "1", "--env", "A=b=c", "--", "python", "-u", "--env", "x",
    ])
    .unwrap();
    assert_eq!(run.command, ["python", "-u", "--env", "x"]);
    assert_eq!(run.env, [("A".to_owned(), "b=c".to_owned())]);
    assert_eq!(run.gpus, Some(1));
    assert_eq!(run.node, None);
    assert_eq!(run.output, PathBuf::from("."));
    assert!(run_args(&["--gpus", "1"]).is_err(), "a command is required");
    assert!(run_args(&["python"]).is_err(), "the command comes after --");
}

#[test]
fn sizes_and_durations_are_parsed_by_clap() {
    let run = run_args(&[
        "--ram",
        "2G",
        "--time-limit",
        "1h30m",
        "--cpu",
        "50%",
        "--",
        "true",
    ])
    .unwrap();
    assert_eq!(run.ram, Some(2 << 30));
    assert_eq!(run.time_limit, Some(5400));
    assert_eq!(run.cpu, Some(50));
    assert!(run_args(&["--ram", "lots", "--", "true"]).is_err());
}

#[test]
fn environment_pairs_need_a_valid_name() {
    assert_eq!(parse_env("PATH=/bin"), Ok(("PATH".into(), "/bin".into())));
    assert_eq!(parse_env("EMPTY="), Ok(("EMPTY".into(), String::new())));
    for bad in ["NOVALUE", "=x", "1A=x", "A-B=x", "A B=x"] {
        assert!(parse_env(bad).is_err(), "{bad:?}");
    }
    assert!(run_args(&["--env", "oops", "--", "true"]).is_err());
}

#[test]
fn durations_take_seconds_or_units() {
    assert_eq!(parse_duration("90"), Ok(90));
    assert_eq!(parse_duration("2h"), Ok(7200));
    assert_eq!(parse_duration("1d2h3m4s"), Ok(93_784));
    for bad in ["", "0", "0s", "h", "2x", "5m3", "-1", "1.5h"] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn job_subcommands_take_a_job_and_options() {
    let args =
        Args::try_parse_from(["partagpuctl", "job", "logs", "3f2a", "--follow", "--from", "10"]).unwrap();
    assert!(matches!(
        args.command,
        Command::Job { command: JobCommand::Logs { job, follow: true, from: 10 } } if job == "3f2a"
    ));
}

#[test]
fn allowed_peers_are_an_ipv4_address_and_a_port_or_range() {
    let run = run_args(&[
        "--allow-peer",
        "10.0.0.5:29500-29510",
        "--allow-peer",
        "10.0.0.6:7000",
        "--",
        "true",
    ])
    .unwrap();
    let ranges: Vec<_> = run
        .allow_peers
        .iter()
        .map(|p| (p.address.to_string(), p.first_port, p.last_port))
        .collect();
    assert_eq!(
        ranges,
        [("10.0.0.5".into(), 29500, 29510), ("10.0.0.6".into(), 7000, 7000)]
    );
    for bad in ["10.0.0.5", "host:80", "10.0.0.5:0", "10.0.0.5:90-80", "[::1]:80"] {
        assert!(
            run_args(&["--allow-peer", bad, "--", "true"]).is_err(),
            "{bad} accepted"
        );
    }
}
