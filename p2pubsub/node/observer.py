"""What a node tells an observer (the simulator's trace writer) about messages and client actions.

Every hook is optional to implement usefully; the default observer does nothing. ``sent`` returns an id for
the message (the trace's ``id``) and ``received`` returns the id of the message that arrived, which the node
then passes as ``cause`` to everything that message leads to (the trace's ``parent_id``), so any delivery can be
traced hop by hop.
"""

from __future__ import annotations

from typing import Any


class Observer:
    def sent(self, node: Any, dst: tuple, msg: Any, nbytes: int, cause: int | None) -> int | None:
        return None

    def received(self, node: Any, src: tuple, msg: Any) -> int | None:
        return None

    def subscribed(self, node: Any, sub_id: str, at: float) -> None:
        pass

    def installed(self, node: Any, sub_id: str, at: float, cause: int | None) -> None:
        pass

    def published(self, node: Any, event_id: str, at: float) -> None:
        pass

    def delivered(self, node: Any, sub_id: str, event: Any, at: float, cause: int | None) -> None:
        pass


NULL_OBSERVER = Observer()
