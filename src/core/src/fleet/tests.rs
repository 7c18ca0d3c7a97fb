// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

const GIB: u64 = 1 << 30;

fn sample() -> NodeState {
    NodeState {
        name: "B12-03".into(),
        version: "0.1.0".into(),
        sharing: SharingState::Sharing,
        limits: Limits::default_for(16 * GIB),
        cpu: CpuInfo {
            model: "AMD Ryzen 7".into(),
            cores: 16,
            usage_percent: 12.5,
        },
        memory: MemoryInfo {
            total_bytes: 16 * GIB,
            available_bytes: 9 * GIB,
        },
        load: LoadAverage {
            one: 0.5,
            five: 0.25,
            fifteen: 0.1,
        },
        gpus: vec![GpuInfo {
            index: 0,
            name: "NVIDIA RTX A4000".into(),
            uuid: "GPU-0123".into(),
            memory_total_bytes: 16 * GIB,
            memory_used_bytes: GIB,
            utilization_percent: 40,
        }],
        gpu_probe: GpuProbeStatus::Available,
    }
}

fn request(state: &NodeState) -> Vec<u8> {
    serde_json::to_vec(&StateRequest {
        op: STATE_OP.into(),
        id: 7,
        state: state.clone(),
    })
    .unwrap()
}

#[test]
fn a_state_round_trips_through_its_request() {
    let state = sample();
    let parsed = parse_request(&request(&state)).unwrap();
    assert_eq!((parsed.id, parsed.state), (7, state.clone()));
    let mut busy = state;
    busy.cpu.usage_percent = 101.0;
    assert_eq!(
        parse_request(&request(&busy)),
        Err(StateError::Invalid("cpu")),
        "parsing checks too"
    );
}

#[test]
fn out_of_bounds_states_are_refused_by_field() {
    type Change = Box<dyn Fn(&mut NodeState)>;
    let cases: Vec<(&str, Change)> = vec![
        ("name", Box::new(|s| s.name = " padded ".into())),
        ("name", Box::new(|s| s.name = "x".repeat(65))),
        ("version", Box::new(|s| s.version = String::new())),
        ("version", Box::new(|s| s.version = "1\u{1b}[2J".into())),
        ("limits", Box::new(|s| s.limits.ram_bytes = 17 * GIB)),
        ("limits", Box::new(|s| s.limits.cpu_percent = 101)),
        ("cpu", Box::new(|s| s.cpu.usage_percent = f64::NAN)),
        ("cpu", Box::new(|s| s.cpu.usage_percent = 100.5)),
        ("memory", Box::new(|s| s.memory.available_bytes = 17 * GIB)),
        ("load", Box::new(|s| s.load.five = -1.0)),
        ("gpus", Box::new(|s| s.gpus[0].utilization_percent = 101)),
        ("gpus", Box::new(|s| s.gpus[0].name = "g".repeat(129))),
        (
            "gpus",
            Box::new(|s| s.gpus = vec![s.gpus[0].clone(); MAX_GPUS + 1]),
        ),
        (
            "gpu_probe",
            Box::new(|s| s.gpu_probe = GpuProbeStatus::Unavailable("\n".into())),
        ),
    ];
    for (field, change) in cases {
        let mut state = sample();
        change(&mut state);
        assert_eq!(state.check(), Err(StateError::Invalid(field)), "{field}");
    }
}

#[test]
fn other_requests_and_garbage_are_told_apart() {
    assert_eq!(
        parse_request(br#"{"op":"job.submit","id":3}"#),
        Err(StateError::UnknownRequest)
    );
    assert_eq!(request_id(br#"{"op":"job.submit","id":3}"#), Some(3));
    assert_eq!(parse_request(b"{"), Err(StateError::Malformed));
    assert_eq!(
        parse_request(br#"{"op":"fleet.state","id":1,"state":{}}"#),
        Err(StateError::Malformed)
    );
    assert_eq!(request_id(b"[]"), None);
    let error = StateError::UnknownRequest.to_string();
    assert_eq!(error, "unknown-request", "the Python peer matches this string");
}
