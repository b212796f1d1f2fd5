"""S3 access from the standard AWS settings: what delta-rs is handed, and the errors for what is missing."""

from __future__ import annotations

import pytest

from ingest.core.errors import ConfigError
from ingest.core.settings.object_storage import Keys, S3Access, is_object_storage, s3_access
from tests.renewing_credentials import renewing, renewing_profile


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """No AWS settings at all, and no instance metadata to fall back on."""
    import os

    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def test_keys_from_the_variables_reach_delta_rs_with_put_if_absent_asked_for_by_name(no_aws):
    no_aws.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    no_aws.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
    no_aws.setenv("AWS_REGION", "eu-west-1")
    no_aws.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9190")
    options = s3_access("s3://lake/bronze").delta_rs_options()
    assert options == {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI",
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9190",
        "AWS_ALLOW_HTTP": "true",
        "conditional_put": "etag",
    }


def test_a_profile_in_the_shared_files_is_found(no_aws, tmp_path):
    (tmp_path / "credentials").write_text(
        "[lake]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s3cr3t\n"
    )
    (tmp_path / "config").write_text("[profile lake]\nregion = ap-south-1\n")
    no_aws.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    no_aws.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    no_aws.setenv("AWS_PROFILE", "lake")
    access = s3_access("s3://lake/bronze")
    assert (access.access_key_id, access.secret_access_key, access.region) == (
        "AKIDPROFILE",
        "s3cr3t",
        "ap-south-1",
    )
    assert access.endpoint_url is None
    assert "AWS_ALLOW_HTTP" not in access.delta_rs_options()


def test_no_credentials_is_a_config_error_that_names_the_variables(no_aws):
    with pytest.raises(ConfigError, match=r"no AWS credentials for s3://lake/bronze: set AWS_ACCESS_KEY_ID"):
        s3_access("s3://lake/bronze")


def test_a_missing_profile_is_a_config_error_that_names_it(no_aws):
    no_aws.setenv("AWS_PROFILE", "nowhere")
    with pytest.raises(ConfigError, match=r"\(nowhere\) could not be found for s3://lake/bronze"):
        s3_access("s3://lake/bronze")


def test_the_secret_and_the_session_token_never_show_in_repr():
    shown = repr(S3Access("AKIDEXAMPLE", "wJalrXUtnFEMI", session_token="FwoGZXIvYXdzEJr"))
    assert "AKIDEXAMPLE" in shown
    assert "wJalrXUtnFEMI" not in shown and "FwoGZXIvYXdzEJr" not in shown
    resolved = S3Access("ASIAEXAMPLE", "secret", credentials=renewing(["FwoGZXIvYXdzEJr"]))
    for shown in (repr(resolved), repr(resolved.keys())):  # the keys as botocore holds them now too
        assert "ASIAEXAMPLE" in shown
        assert "secret" not in shown and "FwoGZXIvYXdzEJr" not in shown


def test_delta_rs_is_handed_the_keys_the_credentials_hold_at_each_use():
    tokens = ["t1"]
    access = S3Access("ASIAEXAMPLE", "secret-t1", session_token="t1", credentials=renewing(tokens))
    assert access.delta_rs_options()["AWS_SESSION_TOKEN"] == "t1"
    tokens.append("t2")  # botocore renewed them
    options = access.delta_rs_options()
    assert (options["AWS_SESSION_TOKEN"], options["AWS_SECRET_ACCESS_KEY"]) == ("t2", "secret-t2")
    # made by hand, without a credentials object: the keys given
    assert S3Access("AKIDEXAMPLE", "secret").keys() == Keys("AKIDEXAMPLE", "secret")


def test_a_profiles_credential_process_is_run_again_as_its_keys_near_expiry(no_aws, tmp_path):
    profile = renewing_profile(tmp_path / "aws", "ASIAPROCESS", "s3cr3t")
    no_aws.setenv("AWS_CONFIG_FILE", str(profile.config_file))
    no_aws.setenv("AWS_PROFILE", profile.name)
    access = s3_access("s3://lake/bronze")
    first, runs = access.delta_rs_options(), profile.runs()
    second = access.delta_rs_options()
    assert (first["AWS_ACCESS_KEY_ID"], first["AWS_SECRET_ACCESS_KEY"]) == ("ASIAPROCESS", "s3cr3t")
    assert second["AWS_SESSION_TOKEN"] != first["AWS_SESSION_TOKEN"] and profile.runs() == runs + 1


def test_keys_are_told_apart_by_the_key_id_and_the_session_token():
    keys = Keys("ASIAEXAMPLE", "secret", "t1")
    assert keys == Keys("ASIAEXAMPLE", "another secret", "t1")
    assert keys != Keys("ASIAEXAMPLE", "secret", "t2") and keys != Keys("ASIAOTHER", "secret", "t1")


@pytest.mark.parametrize(
    ("uri", "remote"),
    [
        ("s3://lake/bronze", True),
        ("s3a://lake/bronze", True),
        ("/srv/warehouse", False),
        ("file:///w", False),
    ],
)
def test_object_storage_is_told_by_the_scheme(uri, remote):
    assert is_object_storage(uri) is remote
