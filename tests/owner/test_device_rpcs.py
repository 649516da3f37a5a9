"""What the device cookie adds to a sign-in on Firestore, pinned (issue 19 item 13).

Counted on the real emulator through ``tests/rpc_counting.py``: a presented cookie
of the right shape is one document read, anything else is not looked up at all,
and remembering a device at a successful sign-in is one write.
"""

from __future__ import annotations

import pytest

from metacortex.owner.devices import OwnerDevices
from metacortex.storage.firestore import FirestoreStore
from tests.firestore_support import PROJECT, FirestoreStoreFactory
from tests.rpc_counting import CountingClient, RpcRecorder

pytestmark = pytest.mark.firestore


def test_a_device_cookie_costs_one_read_to_check_and_one_write_to_remember(
    firestore_store_factory: FirestoreStoreFactory,
) -> None:
    firestore_store_factory()  # wipes the emulator database and points the client at it
    recorder = RpcRecorder()
    store = FirestoreStore(CountingClient(recorder, project=PROJECT), "memory_vectors")
    devices = OwnerDevices(store)
    try:
        value, enrolled = recorder.measure(devices.enrol)
        known, checked = recorder.measure(lambda: devices.recognise(value))
        unknown, made_up = recorder.measure(lambda: devices.recognise("A" * 43))
        _, malformed = recorder.measure(lambda: devices.recognise("x" * 30_000))
    finally:
        store.close()

    assert known is not None
    assert unknown is None
    assert (enrolled.rpcs, enrolled.depth) == (1, 1)
    assert (checked.rpcs, checked.documents) == (1, 1)
    assert (made_up.rpcs, made_up.documents) == (1, 0)
    assert malformed.rpcs == 0
