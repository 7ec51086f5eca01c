"""Other tools' trajectories: reading them, writing them, and round trips without loss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.events import Event, Kind
from simulator.interop import InteropError, export_text, load_foreign, parse_foreign
from simulator.trajectory import TrajectoryError, open_trajectory
from tests.replay.replay_helpers import SAMPLES

OWN_FORMAT = {".traj": "swe-agent", ".json": "mini-swe-agent"}


def steps(events: list[Event]) -> list[tuple[str, str]]:
    """(action, observation) of every command step, in order."""
    results = {e.cause: e for e in events if e.kind == Kind.EXEC_RESULT}
    return [
        (str(e.payload["command"]), str(results[e.seq].payload["output"]))
        for e in events
        if e.kind == Kind.EXEC
    ]


def thoughts(events: list[Event]) -> list[str]:
    return [
        str(e.payload.get("thought", "")).strip() for e in events if e.kind == Kind.LLM_RESPONSE
    ]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_samples_open_as_steps_with_actions_and_observations(sample: Path) -> None:
    source = open_trajectory(sample)
    events = list(source.events())
    raw = json.loads(sample.read_text())
    assistant_turns = [
        m
        for m in (raw if isinstance(raw, list) else raw.get("history") or raw["messages"])
        if m.get("role") == "assistant"
    ]
    pairs = steps(events)
    assert len(pairs) == len(assistant_turns) > 0
    assert all(action for action, _ in pairs)
    assert source.header.imported.format == OWN_FORMAT[sample.suffix]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_samples_round_trip_through_their_own_format(sample: Path) -> None:
    header, events = load_foreign(sample)
    fmt = OWN_FORMAT[sample.suffix]
    again_header, again = parse_foreign(export_text(header, events, fmt), f"again.{fmt}")
    assert steps(again) == steps(events)
    assert thoughts(again) == thoughts(events)
    assert [e.kind for e in again] == [e.kind for e in events]
    assert again_header.repo == header.repo
    assert again_header.agent == header.agent


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent", "openai-chat"])
def test_samples_keep_every_step_through_every_conversation_format(sample: Path, fmt: str) -> None:
    header, events = load_foreign(sample)
    _, again = parse_foreign(export_text(header, events, fmt), f"x.{fmt}")
    if fmt != "openai-chat":
        assert steps(again) == steps(events)
        return
    # OpenAI chat keeps a tool call's name and arguments, not the text SWE-agent rendered from
    # them: observations and the number of steps survive, and so do shell commands.
    assert [o for _, o in steps(again)] == [o for _, o in steps(events)]
    calls = [e.payload.get("tool_calls") for e in events if e.kind == Kind.LLM_RESPONSE]
    for (action, _), (before, _), call in zip(steps(again), steps(events), calls, strict=True):
        if not call or call[0]["name"] == "bash":
            assert action == before
        else:
            assert action.split()[0] == before.split()[0] == call[0]["name"]


def test_import_then_export_via_the_cli_keeps_the_steps(tmp_path: Path) -> None:
    import subprocess
    import sys

    for sample in SAMPLES:
        out = tmp_path / (sample.stem + ".jsonl")
        done = subprocess.run(
            [sys.executable, "-m", "reposim", "import", str(sample), "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        imported = list(open_trajectory(out).events())
        exported = tmp_path / ("back" + sample.suffix)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "reposim",
                "export",
                str(out),
                "--to",
                OWN_FORMAT[sample.suffix],
                "-o",
                str(exported),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        _, back = load_foreign(exported)
        assert steps(back) == steps(imported) == steps(load_foreign(sample)[1])


def test_swe_agent_variations_are_read(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "trajectory": [
            {
                "action": "ls",
                "observation": "a\nb",
                "response": "look\n```\nls\n```",
                "thought": "look",
                "execution_time": 0.5,
                "state": {"working_dir": "/r"},
                "query": [{"role": "system", "content": "x"}],
            },
        ],
        "history": [
            {"role": "system", "content": [{"type": "text", "text": "You are"}]},
            {"role": "user", "content": "fix it", "message_type": "observation"},
            {"role": "assistant", "content": "look", "action": "ls"},
        ],
        "info": {"exit_status": "submitted", "submission": "diff"},
        "replay_config": json.dumps(
            {
                "env": {
                    "repo": {"base_commit": "abc", "repo_name": "r"},
                    "deployment": {"image": "img:1"},
                },
                "agent": {"model": {"name": "gpt-x"}},
            }
        ),
    }
    header, events = parse_foreign(json.dumps(data), "v.traj")
    assert steps(events) == [("ls", "a\nb")]
    assert header.repo.commit == "abc" and header.backend.image == "img:1"
    assert header.agent.model == "gpt-x"
    finish = [e for e in events if e.kind == Kind.AGENT_FINISH]
    assert finish and finish[0].payload["exit_status"] == "submitted"
    again = json.loads(export_text(header, events, "swe-agent"))
    assert again["trajectory"][0]["state"] == {"working_dir": "/r"}
    assert again["trajectory"][0]["execution_time"] == 0.5


def test_mini_swe_agent_current_form_with_extra_and_format_errors() -> None:
    data = {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "config": {"model": {"model_name": "anthropic/claude"}},
            "mini_version": "1.9",
        },
        "messages": [
            {"role": "system", "content": "sys", "extra": {}},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "no action here", "extra": {"response": {}}},
            {"role": "user", "content": "Please always provide EXACTLY ONE action"},
            {"role": "assistant", "content": "THOUGHT: go\n\n```bash\nls -la\n```"},
            {
                "role": "user",
                "content": "<returncode>2</returncode>\n<output>\nnope\n</output>",
                "extra": {"returncode": 2},
            },
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
    header, events = parse_foreign(json.dumps(data), "m.traj.json")
    assert steps(events) == [("ls -la", "nope\n")]
    result = next(e for e in events if e.kind == Kind.EXEC_RESULT)
    assert result.payload["exit_code"] == 2
    assert header.agent.model == "anthropic/claude"
    written = json.loads(export_text(header, events, "mini-swe-agent"))
    assert written["trajectory_format"] == "mini-swe-agent-1.1"
    assert [m["content"] for m in written["messages"]][2:4] == [
        "no action here",
        "Please always provide EXACTLY ONE action",
    ]
    _, again = parse_foreign(json.dumps(written), "again.json")
    assert steps(again) == steps(events)


def test_openai_chat_lines_are_one_conversation_each(tmp_path: Path) -> None:
    header, events = load_foreign(SAMPLES[0])
    text = export_text(header, events, "openai-chat")
    assert text.count("\n") == 1
    record = json.loads(text)
    roles = [m["role"] for m in record["messages"]]
    assert "tool" in roles and roles[0] == "system"
    calls = [m for m in record["messages"] if m.get("tool_calls")]
    answered = {m["tool_call_id"] for m in record["messages"] if m["role"] == "tool"}
    assert {m["tool_calls"][0]["id"] for m in calls} == answered
    two = text + text
    _, joined = parse_foreign(two, "two.jsonl")
    assert len(steps(joined)) == 2 * len(steps(events))


def test_asciicast_round_trip_of_terminal_traffic() -> None:
    cast = (
        "\n".join(
            [
                json.dumps({"version": 2, "width": 100, "height": 30, "timestamp": 1}),
                json.dumps([0.1, "i", "ls\r"]),
                json.dumps([0.2, "o", "ls\r\nfile\r\n$ "]),
                json.dumps([0.5, "m", "here"]),
            ]
        )
        + "\n"
    )
    header, events = parse_foreign(cast, "s.cast")
    assert [e.kind for e in events] == ["terminal.input", "terminal.output", "note"]
    written = export_text(header, events, "asciicast").splitlines()
    assert json.loads(written[0])["width"] == 100
    assert [json.loads(line) for line in written[1:]] == [
        [0.1, "i", "ls\r"],
        [0.2, "o", "ls\r\nfile\r\n$ "],
        [0.5, "m", "here"],
    ]


def test_commands_become_an_asciicast_when_there_is_no_terminal() -> None:
    header, events = load_foreign(SAMPLES[-1])
    lines = export_text(header, events, "asciicast").splitlines()
    frames = [json.loads(line) for line in lines[1:]]
    times = [f[0] for f in frames]
    assert times == sorted(times)
    assert any(f[2].startswith("$ ") for f in frames)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("{}", "neither a RepoSim trajectory nor a SWE-agent"),
        ('{"trajectory": [1]}', "step 1 of `trajectory` is not a JSON object"),
        ('{"version": 2, "width": 3}\n[1, "o"]\n', "line 2 is not a"),
        ('{"messages": [1]}\n', "a message is not a JSON object"),
        ("[1, 2", "line 1 is not JSON"),
    ],
)
def test_bad_foreign_files_are_refused_in_one_sentence(text: str, message: str) -> None:
    with pytest.raises(InteropError, match=message) as caught:
        parse_foreign(text, "bad.traj")
    assert str(caught.value).startswith("bad.traj")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "trajectory",
                    "history",
                    "messages",
                    "info",
                    "role",
                    "content",
                    "action",
                    "observation",
                    "tool_calls",
                    "function",
                    "arguments",
                    "name",
                    "id",
                    "version",
                    "width",
                    "replay_config",
                    "extra",
                    "trajectory_format",
                    "thought",
                    "tool_call_id",
                    "execution_time",
                ]
            ),
            children,
            max_size=6,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_random_json_never_crashes_the_foreign_readers(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value) + "\n" + json.dumps(value)):
        try:
            header, events = parse_foreign(text, "random.json")
        except TrajectoryError:
            continue
        for fmt in ("swe-agent", "mini-swe-agent", "openai-chat", "asciicast"):
            export_text(header, events, fmt)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sample=st.sampled_from(SAMPLES),
    cut=st.floats(min_value=0, max_value=1),
    flips=st.lists(st.tuples(st.floats(0, 1), st.characters()), max_size=5),
)
def test_mutated_samples_never_crash_the_foreign_readers(
    sample: Path, cut: float, flips: list[tuple[float, str]]
) -> None:
    text = list(sample.read_text())
    for where, char in flips:
        text[int(where * (len(text) - 1))] = char
    mutated = "".join(text)[: max(1, int(cut * len(text)))]
    try:
        parse_foreign(mutated, "mutated.traj")
    except TrajectoryError as exc:
        assert str(exc).startswith("mutated.traj")


# -- imports keep what they read (issue 10, item 6) --------------------------------------------


def _swe_agent_variant() -> dict[str, object]:
    """A SWE-agent file shaped like the ones its releases write, but made up here: an agent
    named `primary`, observations templated in the history and bare in `trajectory`, a
    message that belongs to no step, `replay_config` as a JSON string, content as parts."""
    template = "{obs}\n(Open file: /repo/src/{n}.py)\n(Current directory: /repo)\nbash-$"
    steps, history = (
        [],
        [
            {"role": "system", "content": "You are SWE.", "agent": "primary"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Fix the bug."}],
                "agent": "primary",
                "message_type": "observation",
                "is_demo": False,
            },
        ],
    )
    for n, (action, obs) in enumerate([("ls src", "a.py\nb.py"), ("touch x", ""), ("cat x", "")]):
        steps.append(
            {
                "action": action,
                "observation": obs,
                "response": f"I run {action}",
                "thought": f"I run {action}",
                "execution_time": 0.25 * n,
                "state": {"n": n},
            }
        )
        history.append(
            {
                "role": "assistant",
                "content": f"I run {action}",
                "thought": f"I run {action}",
                "action": action,
                "agent": "primary",
                "message_type": "action",
            }
        )
        shown = obs or "Your command ran successfully and did not produce any output."
        history.append(
            {
                "role": "user",
                "content": template.format(obs=shown, n=n),
                "agent": "primary",
                "message_type": "observation",
            }
        )
        if n == 0:
            history.append(
                {
                    "role": "user",
                    "content": "Your output was too long; please narrow it.",
                    "agent": "primary",
                    "message_type": "observation",
                    "requery": True,
                }
            )
    return {
        "trajectory": steps,
        "history": history,
        "info": {"exit_status": "submitted", "submission": "diff --git a/x b/x\n"},
        "replay_config": json.dumps({"agent": {"model": {"name": "gpt-4o"}}, "extra": [1, 2]}),
        "some_future_field": {"kept": True},
    }


def _mini_variants() -> list[object]:
    messages = [
        {"role": "system", "content": "You are mini.", "extra": {"t": 1}},
        {"role": "user", "content": [{"type": "text", "text": "Fix it."}]},
        {"role": "assistant", "content": "No block here."},
        {"role": "user", "content": "Please always provide EXACTLY ONE action."},
        {"role": "assistant", "content": "Look.\n\n```bash\nls -la\n```", "extra": {"cost": 0.1}},
        {
            "role": "user",
            "content": "<returncode>0</returncode>\n<output>\nx\n</output>",
            "extra": {"returncode": 0},
        },
        {"role": "assistant", "content": "Done.\n\n```bash\necho COMPLETE\n```"},
        {"role": "user", "content": "<returncode>0</returncode><output>COMPLETE</output>"},
    ]
    return [
        messages,
        {
            "info": {"model_name": "m1", "exit_status": None},
            "messages": messages,
            "trajectory_format": "mini-swe-agent-1.1",
        },
    ]


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (_swe_agent_variant(), "swe-agent"),
        ({k: v for k, v in _swe_agent_variant().items() if k != "trajectory"}, "swe-agent"),
        (_mini_variants()[0], "mini-swe-agent"),
        (_mini_variants()[1], "mini-swe-agent"),
    ],
    ids=["swe-agent", "swe-agent-history-only", "mini-list", "mini-object"],
)
def test_import_then_export_gives_back_the_same_file(
    data: object, fmt: str, tmp_path: Path
) -> None:
    original = tmp_path / f"original.{'traj' if fmt == 'swe-agent' else 'json'}"
    original.write_text(json.dumps(data))
    imported, exported = tmp_path / "imported.jsonl", tmp_path / "exported.json"
    for args in (
        ["import", str(original), "-o", str(imported)],
        ["export", str(imported), "--to", fmt, "-o", str(exported)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reposim", *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    assert json.loads(exported.read_text()) == data
