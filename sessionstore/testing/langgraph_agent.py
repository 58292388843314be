"""A LangChain agent that runs offline, for tests and benchmarks of the LangGraph integration:
a chat model from langchain_core's fakes that answers by rule and records every request it
receives, and a tool whose output size is chosen.

Each user message gets one tool call (``lookup`` with the message as its query); each tool
result gets a final answer quoting its first words. So a turn is four messages: the user's, a
tool call, its result, the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from pydantic import Field


class ScriptedChatModel(FakeMessagesListChatModel):
    """Answers by rule (a user message → a tool call; a tool result → an answer) and keeps, in
    `received`, every message list it was sent."""

    responses: list[BaseMessage] = Field(default_factory=list)
    received: list[list[BaseMessage]] = Field(default_factory=list)
    tool_name: str = "lookup"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            words = " ".join(str(last.content).split()[:4])
            reply = AIMessage(f"Found it: {words}")
        else:
            query = last.text if isinstance(last, HumanMessage) else "more"
            reply = AIMessage("", tool_calls=[{"name": self.tool_name, "args": {"query": query},
                                               "id": f"call_{len(self.received)}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def lookup_tool(output_chars: int = 200) -> BaseTool:
    """A ``lookup`` tool whose output is about `output_chars` characters long."""

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        line = f"result for {query}: "
        return (line + "lorem ipsum dolor sit amet " * (output_chars // 27 + 1))[:max(output_chars, len(line))]

    return lookup


def make_agent(checkpointer: Any, *, model: ScriptedChatModel | None = None, middleware: Sequence[Any] = (),
               output_chars: int = 200) -> tuple[Any, ScriptedChatModel]:
    """A `create_agent` graph on `checkpointer` with the scripted model and the lookup tool."""
    model = model or ScriptedChatModel()
    graph = create_agent(model, tools=[lookup_tool(output_chars)], checkpointer=checkpointer,
                         middleware=list(middleware))
    return graph, model
