"""Which process owns a record (a container's claim, an output spool, a scratch workspace) is
decided by its start in clock ticks since boot and the boot's id, not by its start in wall-clock
time: a time sync that steps the clock moves the wall-clock start of every process (by a whole
second when /proc/stat's boot time, kept in whole seconds, crosses a second's edge), and with the
old 1 s tolerance every live owner looked gone to gc."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from backends.private_state import boot_id, me, owner_alive, start_ticks

# A live process that says what `me()` records for it, then waits to be ended.
_OWNER = (
    "import json, sys; from backends.private_state import me; "
    "print(json.dumps(me()), flush=True); sys.stdin.read()"
)


@pytest.fixture
def live_owner() -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    record = json.loads(proc.stdout.readline())
    yield proc, record
    proc.kill()
    proc.wait()


def test_a_live_owner_stays_alive_when_the_clock_is_stepped(
    live_owner: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    proc, record = live_owner
    assert record["pid"] == proc.pid
    assert isinstance(record["pid_ticks"], int) and record["boot_id"] == boot_id()
    assert owner_alive(record)
    # After a step of the wall clock, the start computed now differs from the one recorded by
    # the step (a whole second when the boot time's second changes): the same process still.
    for step in (1.0, -1.0, 3600.0):
        assert owner_alive({**record, "pid_start": float(record["pid_start"]) + step})  # type: ignore[arg-type]


def test_a_gone_owner_a_reused_pid_and_another_boot_are_not_alive(
    live_owner: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    proc, record = live_owner
    ticks = start_ticks(proc.pid)
    assert ticks == record["pid_ticks"]
    # The same pid with another start: a later process that was given the pid.
    assert not owner_alive({**record, "pid_ticks": int(ticks) + 1})
    # The same ticks in another boot: the machine restarted since the record was made.
    assert not owner_alive({**record, "boot_id": "00000000-0000-0000-0000-000000000000"})
    proc.kill()
    proc.wait()
    assert start_ticks(proc.pid) is None
    assert not owner_alive(record)


def test_records_from_before_the_ticks_are_judged_on_the_wall_clock_start(
    live_owner: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    _, record = live_owner
    old = {"pid": record["pid"], "pid_start": record["pid_start"]}
    assert owner_alive(old)
    assert not owner_alive({**old, "pid_start": float(record["pid_start"]) - 5})  # type: ignore[arg-type]
    assert not owner_alive({"pid": "not a pid"})
    assert me()["pid_ticks"] == start_ticks(int(me()["pid"]))
