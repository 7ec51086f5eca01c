"""What the UI and the CLI need to start an agent: a client, a mode, budgets, maybe a task."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from simulator.agent.loop import Budgets, Mode
from simulator.agent.models import LiteLLMClient, ModelClient, ModelConfigError

MODEL_VARIABLE = "REPOSIM_MODEL"


@dataclass
class AgentConfig:
    """Handed to `RepoSimApp(agent_config=...)` and on to the agent pane."""

    client: ModelClient | None = None  # None: no model configured; the person acts alone
    mode: Mode = Mode.AUTO
    budgets: Budgets = field(default_factory=Budgets)
    task: str | None = None  # started as soon as the pane is shown, when given
    title: str = ""  # what the pane calls this run, e.g. "demo (scripted replay)"


def resolve_model(model: str | None) -> str:
    """The model to use: the one given, else $REPOSIM_MODEL; one sentence when there is none."""
    name = (model or os.environ.get(MODEL_VARIABLE) or "").strip()
    if not name:
        raise ModelConfigError(
            f"No model is configured; pass --model provider/name (for example "
            f"openai/gpt-4o-mini) or set {MODEL_VARIABLE}."
        )
    return name


def litellm_client(
    model: str | None, *, api_base: str | None = None, timeout: float = 120.0
) -> LiteLLMClient:
    """A checked litellm client: unknown models and missing keys fail here, in one sentence."""
    client = LiteLLMClient(resolve_model(model), api_base=api_base, timeout=timeout)
    if api_base and not os.environ.get("OPENAI_API_KEY") and client.model.startswith("openai/"):
        # A local OpenAI-compatible server usually needs no key, but the SDK insists on one.
        client.api_key = "none"
    client.check()
    return client
