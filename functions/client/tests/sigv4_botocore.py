# The independent SigV4 reference of functions/client/src/auth.rs (`signs_an_execute_api_post_like_botocore`):
# botocore signs the same request at the same instant. Run: python3 tests/sigv4_botocore.py (botocore 1.43.11).
import datetime
from unittest import mock
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
body = b'{"jobId":"nightly","schedule":{"expression":"0 30 2 * * *","timezone":"UTC"}}'
req = AWSRequest(method="POST", url="https://abc123.execute-api.eu-west-1.amazonaws.com/v1/jobs?limit=5",
                 data=body, headers={"content-type": "application/json", "idempotency-key": "k-1"})
creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "SESSIONTOKEN")
fixed = datetime.datetime(2026, 12, 1, 10, 0, 0)
with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
    SigV4Auth(creds, "execute-api", "eu-west-1").add_auth(req)
print(req.headers["Authorization"])
print(req.headers["X-Amz-Date"])
