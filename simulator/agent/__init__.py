"""The agent: a loop over a model client and the session's tools, under a person's control."""

from simulator.agent.config import AgentConfig, litellm_client, resolve_model
from simulator.agent.loop import Agent, ApprovalRequest, Budgets, Mode, RunResult, RunUsage
from simulator.agent.models import (
    LiteLLMClient,
    ModelClient,
    ModelConfigError,
    ModelError,
    ModelTurn,
    ReplayClient,
    ScriptedClient,
    ToolCall,
    Usage,
)
from simulator.agent.tools import TOOL_SCHEMAS, ToolBox, truncate

__all__ = [
    "TOOL_SCHEMAS",
    "Agent",
    "AgentConfig",
    "ApprovalRequest",
    "Budgets",
    "LiteLLMClient",
    "Mode",
    "ModelClient",
    "ModelConfigError",
    "ModelError",
    "ModelTurn",
    "ReplayClient",
    "RunResult",
    "RunUsage",
    "ScriptedClient",
    "ToolBox",
    "ToolCall",
    "Usage",
    "litellm_client",
    "resolve_model",
    "truncate",
]
