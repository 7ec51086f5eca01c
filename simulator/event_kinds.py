"""Who acts and what kind each event is: the enums of simulator.events, apart from its payload
types so that the UI's first frame can name kinds without loading those (issue 29).
simulator.events re-exports both; import them from there unless that load matters."""

from __future__ import annotations

from enum import StrEnum


class Actor(StrEnum):
    HUMAN = "human"
    AGENT = "agent"
    SYSTEM = "system"


class Kind(StrEnum):
    # commands in the persistent shell
    EXEC = "exec"
    EXEC_OUTPUT = "exec.output"  # live chunks for subscribers; never written (exec.result has all)
    EXEC_RESULT = "exec.result"
    INTERRUPT = "interrupt"
    # files
    FILE_READ = "file.read"
    FILE_WRITE = "file.write"
    FILE_EDIT = "file.edit"
    FILE_CREATE = "file.create"
    FILE_DELETE = "file.delete"
    FILE_RENAME = "file.rename"
    SEARCH = "search"
    SEARCH_RESULT = "search.result"
    # tests
    TEST_RUN = "test.run"
    TEST_RESULT = "test.result"
    # the terminal pane
    TERMINAL_INPUT = "terminal.input"
    TERMINAL_OUTPUT = "terminal.output"
    TERMINAL_SIZE = "terminal.size"
    # the agent
    LLM_CALL = "llm.call"
    LLM_RESPONSE = "llm.response"
    TOOL_CALL = "tool.call"
    TOOL_RESULT = "tool.result"
    AGENT_FINISH = "agent.finish"
    # control
    POLICY_DECISION = "policy.decision"
    WORKFLOW_START = "workflow.start"
    WORKFLOW_STEP = "workflow.step"
    WORKFLOW_RESULT = "workflow.result"
    WORKFLOW_END = "workflow.end"
    CHECKPOINT = "checkpoint"
    RESTORE = "restore"
    NOTE = "note"
    ERROR = "error"
    SESSION_END = "session.end"
