"""Drop-in sessions for agent frameworks, each behind its optional extra.

* ``sessionstore.integrations.openai_agents.SessionStoreSession`` — the OpenAI Agents SDK's
  ``Session`` (``pip install 'sessionstore[openai-agents]'``);
* ``sessionstore.integrations.adk.SessionStoreSessionService`` — Google ADK's
  ``BaseSessionService`` (``[adk]``);
* ``sessionstore.integrations.langchain.SessionStoreChatMessageHistory`` — LangChain's
  ``BaseChatMessageHistory`` (``[langchain]``);
* ``sessionstore.integrations.langgraph.SessionStoreSaver`` — LangGraph's checkpointer
  (``BaseCheckpointSaver``), and ``sessionstore.integrations.langchain_middleware.SessionStoreCompaction``
  — compaction as a LangChain agent middleware (``[langgraph]``).

They sit above the store (they import it; nothing in the store imports them), and each
framework is imported only by its own module, so this package imports without any of them.
"""
