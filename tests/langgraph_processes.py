"""A LangGraph graph that asks a human, run one step per process (tests/test_integrations_langgraph.py).

``python -m tests.langgraph_processes ask URL THREAD`` runs until the graph's ``interrupt()`` and
prints what it asks; ``python -m tests.langgraph_processes resume URL THREAD ANSWER`` resumes it
with ``Command(resume=ANSWER)`` on the async methods, in a new process with a new saver, and
prints the final state. Each prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from sessionstore.integrations.langgraph import SessionStoreSaver


class Refund(TypedDict, total=False):
    request: str
    decision: str
    done: str


def approve(state: Refund) -> dict[str, Any]:
    return {"decision": interrupt({"question": f"approve {state['request']}?"})}


def act(state: Refund) -> dict[str, Any]:
    return {"done": f"{state['request']}: {state['decision']}"}


def graph(saver: SessionStoreSaver) -> Any:
    builder = StateGraph(Refund)
    builder.add_node("approve", approve)
    builder.add_node("act", act)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


def main(step: str, url: str, thread: str, *answer: str) -> None:
    config: Any = {"configurable": {"thread_id": thread}}
    saver = SessionStoreSaver(url)
    if step == "ask":
        result = graph(saver).invoke({"request": "refund order 42"}, config)
        print(json.dumps({"asked": result["__interrupt__"][0].value, "next": graph(saver).get_state(config).next}))
    else:
        result = asyncio.run(graph(saver).ainvoke(Command(resume=answer[0]), config))
        print(json.dumps(result))
    saver.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
