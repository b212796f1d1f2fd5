"""A delta-rs handle kept across batches or cycles, opened again once the S3 keys it was opened
with have been renewed.

delta-rs signs every request with the keys in the storage options it was opened with, and never
asks for others. botocore renews a role's keys shortly before they expire (``S3Access.keys``), so
a handle kept longer than they last would start failing: ``KeptTable`` opens it again with the
current keys, at the newest version. Whether they changed is told by the access key id and the
session token botocore holds: no request, and no new look through the credential chain. On a
local disk there are no keys, and a handle is never opened again.
"""

from __future__ import annotations

from deltalake import DeltaTable

from ingest.landing.delta.table_location import TableLocation


class KeptTable:
    def __init__(self, location: TableLocation) -> None:
        self.location = location
        # The keys are read before the open: the handle's are never older than those noted.
        self._keys = location.keys()
        self._table = location.delta_table()

    @property
    def table(self) -> DeltaTable:
        """The handle: the one kept, or one opened now at the newest version when the keys have been
        renewed since."""
        keys = self.location.keys()
        if keys != self._keys:
            table = self.location.delta_table()  # noted once open: a failed open is tried again
            self._keys, self._table = keys, table
        return self._table
