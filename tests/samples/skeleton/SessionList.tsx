import React, { useCallback, useEffect, useMemo, useState } from "react";
import type { FC, ReactNode } from "react";
import { formatDistanceToNow } from "date-fns";

/** One row of the session list, as the API returns it. */
export interface SessionRow {
  id: string;
  title: string;
  updatedAt: string;
  tokens: number;
  /** Set when the session was forked from another one. */
  parentId?: string;
}

export type SortKey = "updatedAt" | "tokens" | "title";

interface SessionListProps {
  sessions: SessionRow[];
  onOpen: (id: string) => void;
  emptyState?: ReactNode;
}

const PAGE_SIZE = 25;

/** Sorts rows without mutating the input (React state must stay immutable). */
export function sortSessions<T extends SessionRow>(rows: readonly T[], key: SortKey): T[] {
  const copy = [...rows];
  copy.sort((a, b) => (key === "tokens" ? b.tokens - a.tokens : String(b[key]).localeCompare(String(a[key]))));
  return copy;
}

/** A clickable row; memoised because lists can hold thousands of sessions. */
const Row: FC<{ row: SessionRow; onOpen: (id: string) => void }> = React.memo(({ row, onOpen }) => {
  const age = useMemo(() => formatDistanceToNow(new Date(row.updatedAt)), [row.updatedAt]);
  return (
    <li className="session-row" onClick={() => onOpen(row.id)}>
      <span className="title">{row.title}</span>
      <span className="age">{age} ago</span>
      {row.parentId ? <span className="fork">forked</span> : null}
    </li>
  );
});

export const SessionList: FC<SessionListProps> = ({ sessions, onOpen, emptyState }) => {
  const [sortKey, setSortKey] = useState<SortKey>("updatedAt");
  const [page, setPage] = useState(0);
  const sorted = useMemo(() => sortSessions(sessions, sortKey), [sessions, sortKey]);

  useEffect(() => {
    setPage(0);
  }, [sortKey]);

  const next = useCallback(() => setPage((p) => p + 1), []);

  if (sessions.length === 0) {
    return <>{emptyState ?? <p className="empty">No sessions yet.</p>}</>;
  }

  return (
    <div className="session-list">
      <select value={sortKey} onChange={(e) => setSortKey(e.target.value as SortKey)}>
        <option value="updatedAt">Recent</option>
        <option value="tokens">Largest</option>
      </select>
      <ul>
        {sorted.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE).map((row) => (
          <Row key={row.id} row={row} onOpen={onOpen} />
        ))}
      </ul>
      <button onClick={next}>More</button>
    </div>
  );
};

export default class SessionErrorBoundary extends React.Component<{ children: ReactNode }, { failed: boolean }> {
  state = { failed: false };

  static getDerivedStateFromError(): { failed: boolean } {
    return { failed: true };
  }

  componentDidCatch(error: Error): void {
    console.error("session list crashed", error);
  }

  render(): ReactNode {
    return this.state.failed ? <p role="alert">Could not show sessions.</p> : this.props.children;
  }
}
