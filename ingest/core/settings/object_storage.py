"""How a Delta table on S3 (``s3://bucket/prefix``) is reached: the standard AWS settings, resolved
by botocore, handed to delta-rs as explicit storage options.

botocore resolves what an operator already uses for every AWS tool: ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY``, or a profile (``AWS_PROFILE`` in ``AWS_SHARED_CREDENTIALS_FILE``), or
a role. delta-rs 1.6.6 alone reads only the variables, not a profile. An S3-compatible server is
named by ``AWS_ENDPOINT_URL``.

A role's keys (a profile's ``role_arn``, ``credential_process`` or SSO, web identity, instance
metadata) expire after about an hour. botocore's credentials object renews them itself, shortly
before they expire, whenever it is asked for them; so ``S3Access`` keeps that object and asks it
at each use (``keys``) instead of keeping the keys it first gave.

Commits on S3 are safe across hosts because delta-rs creates each version of the log with a
conditional put (``If-None-Match: *``): of two writers racing for one version, one gets 412 and
retries at the next. The options ask for it by name, so a change of delta-rs's default cannot
turn it off unseen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ingest.core.errors import ConfigError

S3_SCHEMES = ("s3://", "s3a://")
DEFAULT_REGION = "us-east-1"


def is_object_storage(uri: str) -> bool:
    return uri.startswith(S3_SCHEMES)


@dataclass(frozen=True)
class Keys:
    """The keys to sign with at one moment. Two are equal when their access key id and session
    token are: a renewal changes those, so keys renewed since are told apart without the secret."""

    access_key_id: str
    secret_access_key: str = field(repr=False, compare=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class S3Access:
    """Credentials and endpoint for S3; the secret and the session token never show in ``repr``.

    ``credentials`` is the botocore object the keys were resolved from; the key fields hold the
    keys it first gave. Made by hand without it, the given keys are the ones signed with."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    region: str = DEFAULT_REGION
    endpoint_url: str | None = None
    session_token: str | None = field(default=None, repr=False)
    credentials: Any = field(default=None, repr=False, compare=False)

    def botocore_credentials(self) -> Any:
        """What a botocore client signs with: it asks them for the current keys on every request."""
        if self.credentials is not None:
            return self.credentials
        from botocore.credentials import Credentials

        return Credentials(self.access_key_id, self.secret_access_key, self.session_token)

    def keys(self) -> Keys:
        """The keys now: botocore renews a role's here when they are close to expiring."""
        frozen = self.botocore_credentials().get_frozen_credentials()
        return Keys(frozen.access_key, frozen.secret_key, frozen.token)

    def delta_rs_options(self) -> dict[str, str]:
        """Storage options for a delta-rs table opened now: delta-rs keeps the keys it is handed."""
        keys = self.keys()
        options = {
            "AWS_ACCESS_KEY_ID": keys.access_key_id,
            "AWS_SECRET_ACCESS_KEY": keys.secret_access_key,
            "AWS_REGION": self.region,
            "conditional_put": "etag",
        }
        if keys.session_token:
            options["AWS_SESSION_TOKEN"] = keys.session_token
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            if self.endpoint_url.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"  # a server on loopback or a private network
        return options


def s3_access(uri: str) -> S3Access:
    """The credentials the standard AWS chain finds, or a ConfigError that names how to give them."""
    import botocore.exceptions
    import botocore.session

    session = botocore.session.Session()
    try:
        credentials = session.get_credentials()
        region = session.get_config_variable("region")
    except botocore.exceptions.ProfileNotFound as err:
        raise ConfigError(
            f"{err} for {uri}: name a profile of AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE in "
            "AWS_PROFILE, or unset AWS_PROFILE and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from None
    if credentials is None:
        raise ConfigError(
            f"no AWS credentials for {uri}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
            "(with AWS_SHARED_CREDENTIALS_FILE when the profile is not in ~/.aws/credentials)"
        )
    frozen = credentials.get_frozen_credentials()
    return S3Access(
        access_key_id=frozen.access_key,
        secret_access_key=frozen.secret_key,
        # botocore reads AWS_DEFAULT_REGION; the newer SDKs and delta-rs read AWS_REGION too.
        region=os.environ.get("AWS_REGION") or region or DEFAULT_REGION,
        endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"),
        session_token=frozen.token,
        credentials=credentials,
    )
