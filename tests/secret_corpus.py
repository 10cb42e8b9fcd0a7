"""Fake secrets of many kinds, each in a sentence, and near misses that must stay as they are.

Every fake matches its real format (prefix, length, character set) but is generated here from a seed, so no real
credential is pasted and secret scanners find no literal token in this file; where the character set allows,
the random part starts with FAKE.

Decisions (documented here because the near misses encode them):
- A value assigned to a secret-named key is redacted, even a dev-looking one (`JWT_SECRET=e2e-local-...`): the
  app accepts it, so it is a credential. Only recognised placeholders are left: `xxxx`/`XXXX`/`...` stand-ins
  (`SG.xxxxx.yyyyy`, `ghp_XXXX...`, `sk-...`), `<token>`, `${VAR}`/`$VAR`, `your-...`, `changeme`, None/null.
- Prose passwords ("the password is X") are redacted when X has a digit or symbol, is quoted, or is CamelCase
  with two inner capitals; an all-letter word is prose ("is required", "is hashed").
- Hashes (git SHAs, sha256 digests, image digests), UUIDs and base64 data are left unless a secret word ("key",
  "token", "secret", "password", "signature") comes just before them: "the signing key is <hex>" is a secret.
- Public keys (ssh-ed25519 AAAA..., BEGIN PUBLIC KEY) and Stripe-style publishable ids are not secrets.
"""
from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

__all__ = ["NEAR_MISSES", "SECRETS", "Secret", "fake"]

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPHEX = "0123456789ABCDEF"
B64 = B62 + "+/"
URLSAFE = B62 + "-_"
UPPER36 = string.ascii_uppercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def fake(seed: str, n: int, alphabet: str = B62) -> str:
    """`n` random-looking characters of `alphabet`, the same every run; starts with FAKE when it can."""
    rng = random.Random(seed)
    head = "FAKE" if set("FAKE") <= set(alphabet) and n >= 12 else ""
    return head + "".join(rng.choice(alphabet) for _ in range(n - len(head)))


def pem(kind: str, lines: int = 8) -> tuple[str, str]:
    """A fake PEM block of `kind` ("RSA PRIVATE KEY", ...) and its base64 body (the part that must go)."""
    body = "\n".join(fake(f"{kind}{i}", 64, B64) for i in range(lines)) + "\n" + fake(kind + "end", 24, B64) + "=="
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----", body


@dataclass(frozen=True)
class Secret:
    kind: str
    text: str  # a sentence stating the secret (multi-line for key files)
    secret: str  # the exact substring that must disappear

    def __post_init__(self) -> None:
        assert self.secret in self.text, self.kind


def _s(kind: str, template: str, secret: str) -> Secret:
    return Secret(kind, template.replace("{}", secret), secret)


_rsa, _rsa_body = pem("RSA PRIVATE KEY")
_ec, _ec_body = pem("EC PRIVATE KEY", 3)
_ssh, _ssh_body = pem("OPENSSH PRIVATE KEY", 6)
_pgp, _pgp_body = pem("PGP PRIVATE KEY BLOCK", 6)
_pkcs8_body = "\\n".join(fake(f"gcp{i}", 64, B64) for i in range(6))
_putty_private = fake("putty-private", 44, B64)
_putty = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\n"
          f"AAAAC3NzaC1lZDI1NTE5AAAAI{fake('putty-public', 39, B64)}\n{fake('putty-public2', 20, B64)}\n"
          f"Private-Lines: 1\n{_putty_private}\nPrivate-MAC: {fake('putty-mac', 64, HEX)}")
_docker_auth = base64.b64encode(b"deploy:Fake-Registry-Pass-" + fake("docker", 8).encode()).decode()
_sas_sig = fake("sas", 30, B62) + "%2B" + fake("sas2", 10, B62) + "%3D"
_uuid = "-".join(fake("uuid" + str(i), n, HEX) for i, n in enumerate((8, 4, 4, 4, 12)))

SECRETS: list[Secret] = [
    # cloud providers
    _s("aws-access-key-id", "The CI user signs requests with access key id {} in us-east-1.",
       "AKIA" + fake("aws", 16, UPPER36)),
    _s("aws-secret-access-key", "The deploy profile sets aws_secret_access_key = {} for the artifacts bucket.",
       fake("aws-secret", 40, B64)),
    _s("aws-session-token", "The runner exports AWS_SESSION_TOKEN={} before the upload step.",
       "FwoGZXIvYXdzE" + fake("aws-session", 120, B64)),
    _s("aws-presigned-url", "The nightly export link is https://fake-bucket.s3.amazonaws.com/export.csv"
       "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature={} and expires hourly.",
       fake("amz-sig", 64, HEX)),
    _s("alibaba-access-key", "The OSS mirror uses the Alibaba access key {} for uploads.", "LTAI" + fake("ali", 20)),
    _s("azure-storage-account-key", "The backup job connects with DefaultEndpointsProtocol=https;AccountName=fakestore;"
       "AccountKey={};EndpointSuffix=core.windows.net for the nightly dump.", fake("azure-key", 86, B64) + "=="),
    _s("azure-sas-signature", "Backups are read through https://fakestore.blob.core.windows.net/backups/db.bak"
       "?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&spr=https&sig={} in the restore script.", _sas_sig),
    _s("azure-service-bus", "The order consumer uses Endpoint=sb://fake-orders.servicebus.windows.net/;"
       "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={} for the queue.", fake("sb", 43, B64) + "="),
    _s("azure-sql-connection-string", "The reporting job connects with Server=tcp:fake.database.windows.net,1433;"
       "Initial Catalog=shop;User ID=report;Password={};Encrypt=True for the monthly export.",
       "Fak3-Sql-" + fake("sql", 10)),
    _s("azure-ad-client-secret", "The daemon app authenticates with the Entra client secret {} until March.",
       fake("aad", 3) + "8Q~" + fake("aad2", 34)),
    Secret("gcp-service-account-key", 'The CI service account file holds {"type": "service_account", "project_id": '
           '"fake-project", "private_key": "-----BEGIN PRIVATE KEY-----\\n' + _pkcs8_body + '\\n-----END PRIVATE '
           'KEY-----\\n", "client_email": "ci@fake-project.iam.gserviceaccount.com"} for deployments.', _pkcs8_body),
    _s("google-api-key", "The maps widget calls the geocoder with key {} from the browser.",
       "AIza" + fake("gapi", 35, URLSAFE)),
    _s("google-oauth-client-secret", "The login app is registered with client secret {} in the console.",
       "GOCSPX-" + fake("gocspx", 28, URLSAFE)),
    _s("google-oauth-access-token", "The sync job replays requests with access token {} from the cache.",
       "ya29." + fake("ya29", 100, URLSAFE)),
    _s("google-refresh-token", "The calendar sync stores refresh token {} for the shared account.",
       "1//0" + fake("refresh", 60, URLSAFE)),
    _s("digitalocean-token", "The droplet script uses the DigitalOcean token {} for provisioning.",
       "dop_v1_" + fake("do", 64, HEX)),
    _s("heroku-api-key", "The review apps are created with the Heroku key {} from the pipeline.",
       "HRKU-" + fake("heroku", 60, URLSAFE)),
    _s("heroku-legacy-uuid-key", "The release script exports HEROKU_API_KEY={} for the deploy.", _uuid),
    _s("terraform-cloud-token", "The plan job authenticates with the Terraform token {} in CI.",
       fake("tf", 14) + ".atlasv1." + fake("tf2", 67, URLSAFE)),
    _s("databricks-token", "The notebook runner uses the Databricks token {} for jobs.",
       "dapi" + fake("dapi", 32, HEX)),
    _s("pulumi-token", "The stack update runs with Pulumi access token {} in the pipeline.",
       "pul-" + fake("pulumi", 40, HEX)),
    _s("fly-io-token", "The deploy uses the Fly.io token {} for the staging app.", "fo1_" + fake("fly", 43, URLSAFE)),
    _s("vault-token", "The config loader reads Vault with token {} on boot.", "hvs." + fake("vault", 90, URLSAFE)),
    _s("doppler-token", "The service pulls its settings with Doppler token {} at startup.",
       "dp.pt." + fake("doppler", 43)),
    _s("tailscale-auth-key", "New runners join the tailnet with auth key {} automatically.",
       "tskey-auth-k" + fake("ts", 10) + "CNTRL-" + fake("ts2", 32)),
    _s("cloudflare-api-token", "The Cloudflare API token is set to {} in the vault for the DNS job.",
       fake("cf", 40, URLSAFE).replace("-", "7").replace("_", "9")),
    # source hosting and CI
    _s("github-pat-classic", "The release workflow pushes tags with {} as the token.", "ghp_" + fake("ghp", 36)),
    _s("github-oauth-token", "The bot authenticates with {} for the review comments.", "gho_" + fake("gho", 36)),
    _s("github-fine-grained-pat", "The mirror job uses {} to read the private repos.",
       "github_pat_" + fake("ghpat", 22) + "_" + fake("ghpat2", 59)),
    _s("github-app-token-in-url",
       "The clone step runs git clone https://x-access-token:{}@github.com/org/shop.git daily.",
       "ghs_" + fake("ghs", 36)),
    _s("gitlab-pat", "Deploys use the GITLAB token {} with the api scope.", "glpat-" + fake("glpat", 20, URLSAFE)),
    _s("gitlab-runner-token", "The runner registered with {} on the shared host.", "glrt-" + fake("glrt", 20, URLSAFE)),
    _s("gitlab-deploy-token", "The package registry is read with deploy token {} from CI.",
       "gldt-" + fake("gldt", 20, URLSAFE)),
    _s("bitbucket-app-password", "The legacy pipeline clones with the Bitbucket app password {} still.",
       "ATBB" + fake("atbb", 32)),
    _s("atlassian-api-token", "The Jira sync uses the Atlassian API token {} for the service user.",
       "ATATT3xFfGF0" + fake("atatt", 180, URLSAFE) + "=" + fake("atatt2", 8, UPHEX)),
    _s("buildkite-token", "The agent uses Buildkite token {} for the API.", "bkua_" + fake("bk", 40, HEX)),
    _s("npm-token", "Publishing uses the npm token {} from the release vault.", "npm_" + fake("npm", 36)),
    _s("pypi-token", "The wheel upload step uses {} as the PyPI token.",
       "pypi-AgEIcHlwaS5vcmc" + fake("pypi", 70, URLSAFE)),
    _s("rubygems-key", "Gem releases push with the RubyGems key {} from CI.", "rubygems_" + fake("gem", 48, HEX)),
    _s("dockerhub-pat", "Image pushes log in with the Docker Hub token {} from CI.",
       "dckr_pat_" + fake("dckr", 27, URLSAFE)),
    _s("artifactory-api-key", "The Maven mirror uses the Artifactory key {} for reads.", "AKCp" + fake("akcp", 69)),
    # messaging, email, payments
    _s("slack-bot-token", "The alert bot posts with {} in the ops channel.",
       "xoxb-" + fake("xoxb1", 12, "0123456789") + "-" + fake("xoxb2", 13, "0123456789") + "-" + fake("xoxb3", 24)),
    _s("slack-user-token", "The export script runs as {} for the archive.",
       "xoxp-" + fake("xoxp1", 12, "0123456789") + "-" + fake("xoxp2", 12, "0123456789") + "-"
       + fake("xoxp3", 32, HEX)),
    _s("slack-app-token", "Socket mode connects with {} on startup.",
       "xapp-1-A" + fake("xapp1", 10, UPPER36) + "-" + fake("xapp2", 13, "0123456789") + "-" + fake("xapp3", 64, HEX)),
    _s("slack-incoming-webhook", "Alerts are posted to {} from the monitor.",
       "https://hooks.slack.com/services/T" + fake("slackT", 10, UPPER36) + "/B" + fake("slackB", 10, UPPER36) + "/"
       + fake("slackW", 24)),
    _s("discord-webhook", "Release notes go to {} after each deploy.",
       "https://discord.com/api/webhooks/" + fake("dwh", 19, "0123456789") + "/" + fake("dwh2", 68, URLSAFE)),
    _s("discord-bot-token", "The community bot logs in with {} on startup.",
       "MTA" + fake("dbot", 23, URLSAFE) + "." + fake("dbot2", 6, URLSAFE) + "." + fake("dbot3", 38, URLSAFE)),
    _s("telegram-bot-token", "The on-call bot uses the Telegram token {} for pages.",
       fake("tg", 10, "123456789") + ":AA" + fake("tg2", 33, URLSAFE)),
    _s("teams-webhook", "Build failures are posted to {} for the team.",
       "https://fakecorp.webhook.office.com/webhookb2/" + _uuid + "@" + _uuid + "/IncomingWebhook/"
       + fake("teams", 32, HEX) + "/" + _uuid),
    _s("sendgrid-api-key", "Transactional mail goes out through SendGrid with key {} in production.",
       "SG." + fake("sg1", 22, URLSAFE) + "." + fake("sg2", 43, URLSAFE)),
    _s("mailgun-api-key", "The newsletter uses the Mailgun key {} for the EU domain.", "key-" + fake("mailgun", 32)),
    _s("mailchimp-api-key", "The audience sync uses Mailchimp API key {} from the vault.",
       fake("mc", 32, HEX) + "-us21"),
    _s("brevo-api-key", "Campaign mail uses the Brevo key {} for sending.",
       "xkeysib-" + fake("brevo", 64, HEX) + "-" + fake("brevo2", 16)),
    _s("resend-api-key", "Password reset mail is sent via Resend with {} as the key.",
       "re_" + fake("resend", 8) + "_" + fake("resend2", 24)),
    _s("twilio-api-key", "SMS verification uses the Twilio API key {} with its secret.",
       "SK" + fake("twilio", 32, HEX)),
    _s("twilio-auth-token", "The Twilio auth token is {} for the main account.", fake("twilio-auth", 32, HEX)),
    _s("stripe-secret-key", "Billing charges cards with {} in production.", "sk_" + "live_" + fake("stripe", 24)),
    _s("stripe-restricted-key", "The reporting job reads charges with {} only.", "rk_" + "live_" + fake("rk", 24)),
    _s("stripe-webhook-secret", "Webhook payloads are verified with the signing secret {} on receipt.",
       "whsec_" + fake("whsec", 32)),
    _s("square-access-token", "The POS sync uses the Square token {} for the store.",
       "sq0atp-" + fake("sq", 22, URLSAFE)),
    _s("shopify-access-token", "The storefront sync calls the Admin API with {} as the token.",
       "shpat_" + fake("shop", 32, HEX)),
    _s("meta-access-token", "The ads report uses the Graph API token {} for the page.", "EAA" + fake("meta", 120)),
    # AI and data APIs
    _s("openai-project-key", "The summariser calls the API with {} for the batch jobs.",
       "sk-" + "proj-" + fake("oai", 48, URLSAFE)),
    _s("openai-legacy-key", "The old prototype still uses {} for completions.", "sk-" + fake("oai-legacy", 48)),
    _s("anthropic-api-key", "The agent harness uses {} for the eval runs.",
       "sk-" + "ant-api03-" + fake("ant", 93, URLSAFE) + "AA"),
    _s("openrouter-key", "Model fallbacks go through OpenRouter with {} as the key.",
       "sk-" + "or-v1-" + fake("or", 64, HEX)),
    _s("huggingface-token", "Model downloads use the Hugging Face token {} for gated repos.", "hf_" + fake("hf", 34)),
    _s("replicate-token", "Image generation calls Replicate with {} from the worker.", "r8_" + fake("r8", 37)),
    _s("groq-key", "The fast path calls Groq with {} for chat.", "gsk_" + fake("groq", 52)),
    _s("perplexity-key", "Search answers come from Perplexity with {} as the key.", "pplx-" + fake("pplx", 48)),
    _s("xai-key", "The comparison run calls Grok with {} as the key.", "xai-" + fake("xai", 80)),
    _s("langsmith-key", "Tracing goes to LangSmith with {} for the project.",
       "lsv2_pt_" + fake("ls", 32, HEX) + "_" + fake("ls2", 10, HEX)),
    _s("notion-secret", "The docs importer reads Notion with {} for the workspace.", "secret_" + fake("notion", 43)),
    _s("notion-ntn-token", "The wiki sync uses Notion token {} since the migration.",
       "ntn_" + fake("ntn", 11, "0123456789") + fake("ntn2", 35)),
    _s("linear-api-key", "Issue sync uses the Linear key {} for the bot user.", "lin_api_" + fake("linear", 40)),
    _s("airtable-pat", "The CRM export reads Airtable with {} as the token.",
       "pat" + fake("air", 14) + "." + fake("air2", 64, HEX)),
    _s("figma-token", "Design tokens are exported from Figma with {} weekly.", "figd_" + fake("figma", 40, URLSAFE)),
    _s("mapbox-secret-token", "Tile uploads use the Mapbox token {} from the build.",
       "sk.eyJ1IjoiZmFrZSIsImEiOiJ" + fake("mapbox", 22, URLSAFE) + "." + fake("mapbox2", 22, URLSAFE)),
    # monitoring and databases
    _s("sentry-dsn", "Errors are reported to https://{}@o450123.ingest.sentry.io/4505123 from the API.",
       fake("sentry", 32, HEX)),
    _s("sentry-auth-token", "Source maps upload with the Sentry token {} in CI.",
       "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9" + fake("sntrys", 60, B62)),
    _s("datadog-api-key", "The agent ships metrics with DD_API_KEY={} in the container.", fake("dd", 32, HEX)),
    _s("datadog-app-key", "Dashboards are managed with the Datadog application key {} via Terraform.",
       fake("ddapp", 40, HEX)),
    _s("new-relic-key", "APM data is sent with the New Relic key {} from each host.",
       "NRAK-" + fake("nr", 27, UPPER36)),
    _s("grafana-service-account", "Dashboards are provisioned with {} as the Grafana token.",
       "glsa_" + fake("glsa", 32) + "_" + fake("glsa2", 8, HEX)),
    _s("dynatrace-token", "The OneAgent installer uses {} as the Dynatrace token.",
       "dt0c01." + fake("dt", 24, UPPER36) + "." + fake("dt2", 64, UPPER36)),
    _s("supabase-token", "Migrations run with the Supabase token {} from CI.", "sbp_" + fake("sbp", 40, HEX)),
    _s("planetscale-token", "Branch deploys use the PlanetScale token {} for the org.",
       "pscale_tkn_" + fake("pscale", 43, URLSAFE)),
    _s("postman-key", "The API collection syncs with the Postman key {} nightly.",
       "PMAK-" + fake("pmak", 24, HEX) + "-" + fake("pmak2", 34, HEX)),
    _s("postgres-url-password", "The app connects to postgres://app:{}@db.internal:5432/shop for orders.",
       "Fak3-Pg-" + fake("pgurl", 10)),
    _s("basic-auth-url", "The registry mirror is https://deploy:{}@registry.example.com/v2/ for pulls.",
       "Fak3-Reg-" + fake("basic", 10)),
    _s("pgpass-line", "The ~/.pgpass entry is db.internal:5432:shop:app:{} for the reporting user.",
       "Fak3PgPass-" + fake("pgpass", 8)),
    _s("pgpassword-env", "The backup cron runs with PGPASSWORD={} in its environment.",
       "Fak3-" + fake("pgpassword", 14)),
    _s("mysql-pwd-env", "The import script exports MYSQL_PWD={} before running mysql.", "Fak3-" + fake("mysqlpwd", 14)),
    _s("mysql-p-flag", "The restore command is mysql -u root -p{} shop < dump.sql on the replica.",
       "Fak3Root" + fake("mysqlp", 8)),
    _s("mongodb-srv-url", "Analytics reads from mongodb+srv://analytics:{}@cluster0.fake.mongodb.net/events daily.",
       "Fak3Mongo" + fake("mongo", 10)),
    _s("redis-url-password", "The cache is redis://:{}@cache.internal:6379/0 in staging.",
       "Fak3Redis" + fake("redis", 10)),
    # files, headers, CLIs
    _s("netrc-line", "The ~/.netrc has machine api.example.com login deploy password {} for the mirror.",
       "Fak3Netrc-" + fake("netrc", 8)),
    Secret("docker-config-auth", 'The runner config is {"auths": {"registry.example.com": {"auth": "' + _docker_auth
           + '"}}} for pulls.', _docker_auth),
    _s("docker-login-password-flag",
       "CI logs in with docker login -u deploy --password {} registry.example.com each run.",
       "Fak3-Docker-" + fake("dockerpw", 8)),
    _s("curl-user-password", "The smoke test runs curl -u deploy:{} https://api.example.com/health after deploys.",
       "Fak3Curl" + fake("curl", 10)),
    _s("cli-token-flag", "The preview deploy runs vercel deploy --token {} on each branch.",
       "Fak3" + fake("vercel", 20)),
    _s("bearer-header", "The integration test sends Authorization: Bearer {} to the API.", fake("bearer", 40, URLSAFE)),
    _s("basic-auth-header", "The legacy client sends Authorization: Basic {} on every call.",
       base64.b64encode(b"deploy:Fake-Basic-" + fake("basichdr", 8).encode()).decode()),
    _s("okta-ssws-header", "The user sync calls Okta with Authorization: SSWS {} from the cron.",
       "00" + fake("okta", 40, URLSAFE)),
    _s("x-api-key-header", "The partner API expects x-api-key: {} on each request.", "Fak3" + fake("xapikey", 28)),
    _s("jwt", "The admin session uses the JWT {} for the dashboard.",
       "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlLWFkbWluIiwiaWF0IjoxNzAwMDAwMDAwfQ."
       + fake("jwt", 43, URLSAFE)),
    _s("access-token-query-param",
       "The export is downloaded from https://api.example.com/v1/export?format=csv&access_token={} nightly.",
       "Fak3" + fake("qtoken", 28)),
    _s("kubeconfig-client-key", "The kubeconfig user has client-key-data: {} for the admin context.",
       "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo" + fake("kube", 80, B64)),
    _s("kubernetes-secret-data", "The db secret manifest has password: {} under data.",
       base64.b64encode(b"Fake-K8s-" + fake("k8s", 10).encode()).decode()),
    _s("wireguard-private-key", "The VPN peer config has PrivateKey = {} for the bastion.", fake("wg", 43, B64) + "="),
    _s("rails-secret-key-base", "Production boots with SECRET_KEY_BASE={} from the vault.", fake("rails", 128, HEX)),
    _s("django-secret-key", "The settings module has SECRET_KEY = '{}' for production.",
       "django-insecure-" + fake("django", 50)),
    _s("dev-jwt-secret", "The e2e stack runs with JWT_SECRET={} in docker compose.",
       "e2e-local-jwt-secret-not-for-production"),
    _s("bcrypt-hash", "The seed admin row stores password_hash {} for the admin user.",
       "$2b$12$" + fake("bcrypt", 53, B62 + "./")),
    _s("sha512crypt-shadow", "The image's /etc/shadow line is root:{}:19000:0:99999:7::: for the root user.",
       "$6$" + fake("shadow-salt", 16, B62) + "$" + fake("shadow", 86, B62 + "./")),
    _s("high-entropy-signing-key", "The webhook signing key is {} and rotates monthly.", fake("signing", 64, HEX)),
    # key files
    Secret("rsa-private-key", f"The deploy host key is this file:\n{_rsa}\nkept only on the bastion.", _rsa_body),
    Secret("ec-private-key", f"The signing service loads this key:\n{_ec}\nat boot.", _ec_body),
    Secret("openssh-private-key", f"The CI deploy key is:\n{_ssh}\nfor the release user.", _ssh_body),
    Secret("pgp-private-key", f"The package signing key is:\n{_pgp}\nfor release artifacts.", _pgp_body),
    Secret("putty-private-key", f"The Windows jump host uses this PuTTY key:\n{_putty}\nfor the ops user.",
           _putty_private),
    _s("age-secret-key", "The sops age identity on the build box is {} since March.",
       "AGE-SECRET-KEY-1" + fake("age", 58, BECH32)),
    # passwords stated in prose
    _s("prose-password-is", "We decided to use the staging database; the password is {}.", "hunter2"),
    _s("prose-password-for-x-is", "The password for the staging admin account is {} until rotation.", "Fak3-Adm1n!"),
    _s("prose-pw-colon", "Staging box: user deploy, pw: {} for now.", "Fak3pw99"),
    _s("prose-passphrase-was", "The signing key's passphrase was {} before the reset.", "Fake-Passphrase-7"),
    _s("prose-password-changed-to", "The root password has been changed to {} on the replica.", "Fak3R00t#2026"),
    _s("prose-password-quoted", 'The wifi password is "{}" in the office.', "correct horse battery"),
    _s("prose-password-camelcase", "The shared vault password is {} for the team.", "CorrectHorseBatteryStaple"),
    _s("prose-login-with-password", "Log in to the admin panel as admin with password {} on staging.", "Fak3Panel42"),
    _s("prose-credentials-are", "The test tenant credentials are {} for the demo.", "demo:Fak3Demo99"),
    _s("prose-api-key-is", "The analytics API key is {} for the reporting job.", "Fak3an4lyt1cs"),
    _s("yaml-password", "The chart values set password: {} for the redis subchart.", "Fak3-Redis-Chart1"),
]

NEAR_MISSES: list[tuple[str, str]] = [
    ("placeholder SendGrid key", "SendGrid keys look like SG.xxxxx.yyyyy; set SENDGRID_API_KEY in the environment."),
    ("placeholder sk-...", "Set OPENAI_API_KEY=sk-... in .env before running the script."),
    ("placeholder your-...", "The example config has API_KEY=your-api-key-here for new users."),
    ("placeholder ghp_XXXX", "The docs show GITHUB_TOKEN=ghp_" + "X" * 36 + " as the format."),
    ("placeholder <token>", "Use --token <token> to authenticate the CLI."),
    ("placeholder ${{ }}", "The workflow sets GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} for the release step."),
    ("placeholder $VAR", 'curl -H "Authorization: Bearer $TOKEN" -u $USER:$API_TOKEN https://api.example.com/v1'),
    ("placeholder os.environ", "password=os.environ['DB_PASSWORD'], token=None, secret=${SECRET}"),
    ("placeholder changeme", "The compose example ships with password=changeme for local use only."),
    ("git sha", "The fix landed in commit " + fake("sha1", 40, HEX) + " on main."),
    ("sha256 of a file", "The sha256 of the release tarball is " + fake("sha256", 64, HEX) + "."),
    ("image digest", "Pin the image as postgres@sha256:" + fake("digest", 64, HEX) + " in the chart."),
    ("uuid", "The failing request id was 550e8400-e29b-41d4-a716-446655440000 in the logs."),
    ("npm integrity", '"integrity": "sha512-' + fake("integrity", 86, B64) + '==" in the lockfile.'),
    ("base64 image in code", '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4'
                              '2mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" alt="dot">'),
    ("token in prose", "Each token costs about four characters of English text."),
    ("tokenizer setting", "The tokenizer=cl100k_base setting matches the model."),
    ("max_tokens", "max_tokens=4096, temperature=0.2, input_tokens: 1200"),
    ("token count", "token: 4096 max per request, token limit is 8192."),
    ("password rule", "The password must be at least 12 characters."),
    ("reset password", "Reset your password from the account settings page."),
    ("password field", "The password field is required."),
    ("password is required", "The password is required for the admin account."),
    ("password for x is required", "The password for the admin account is required."),
    ("password length", "The password is 12+ characters long and the passphrase is 20 characters."),
    ("passwords hashed", "Passwords are hashed with argon2id before they are stored."),
    ("password colon prose", "password: must be at least 12 characters long"),
    ("passwordless", "Passwordless login uses magic links sent by email."),
    ("api key stored", "The API key is stored in AWS Secrets Manager."),
    ("token valid", "The token is valid for 24 hours."),
    ("secret is to", "The secret is to batch the writes."),
    ("credentials stored", "The credentials are stored in ~/.aws/credentials on the runner."),
    ("bearer prose", "Use a Bearer token in the Authorization header."),
    ("key insight", "The key insight is that the cache is per process."),
    ("retention key", "Our retention key is 30 days."),
    ("ssh public key",
     "The public key is ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake("pub", 43, B64) + " dev@laptop."),
    ("pem public key", "-----BEGIN PUBLIC KEY-----\n" + fake("pubpem", 64, B64) + "\n" + fake("pubpem2", 64, B64)
     + "\n-----END PUBLIC KEY-----"),
    ("password-stdin", "echo $TOKEN | docker login ghcr.io -u bot --password-stdin"),
    ("PWD env", "PWD=/home/dev/shop OLDPWD=/home/dev"),
    ("pwd command", "Run pwd to print the working directory: pwd is /home/dev/shop here."),
    ("pw variable", "pw_hash = bcrypt.hashpw(pw, salt) stores only the hash."),
    ("docker -u uid:gid", "docker run -u 1000:1000 -p 8080:80 app"),
    ("mysql -p prompt", "mysql -h db -P 3306 -u app -p shop"),
    ("timestamps", "Timestamps like 2024-05-01T12:30:45Z and 12:30:45:123 are fine."),
    ("mac address", "MAC address 00:1A:2B:3C:4D:5E on eth0."),
    ("telegram chat id", "The Telegram chat id is -1001234567890."),
    ("slack prefix", "The xoxb- prefix marks a Slack bot token."),
    ("aws account id", "AWS account 123456789012 in us-east-1."),
    ("slug", "Tasks: task-list-abcdefghijklmnopqrstuvwxyz is a slug, ask-me-anything too."),
    ("camel identifiers near signature", "Let me check the runUnifiedMode and runIndependentMode signatures, and the "
                                         "prompt-generator's buildErrorFixPrompt/buildSuggestionEnrichPrompt."),
    ("pip pins", "pip install tokenizers==0.15.2 transformers==4.40.0"),
    ("sentry page", "See https://sentry.io/organizations/acme/issues/4505/ for the stack trace."),
    ("git ssh url", "git clone git@github.com:org/repo.git and ssh://git@host/repo"),
    ("webhook path", "The webhook endpoint is https://hooks.example.com/webhooks/orders for events."),
    ("email", "Email alerts go to oncall@example.com."),
    ("npm config", "The npm_config_cache variable points to /tmp/npm-cache."),
    ("hf transfer", "HF_HUB_ENABLE_HF_TRANSFER=1 speeds up downloads."),
    ("jwt header only", "jwt: eyJhbGciOiJIUzI1NiJ9 is just the header."),
    ("versions", "Versions: node 20.11.1, python 3.11.9, postgres 16.2."),
    ("sk-proj prefix prose", "Each API key has a prefix like sk-proj- followed by random characters."),
    ("amz params prose", "Signed URLs carry X-Amz-Signature and X-Amz-Credential query parameters."),
    ("sig param prose", "The sig= parameter is the SAS signature."),
    ("url with port", "See https://example.com:8080/docs?page=2#auth and http://localhost:3000/"),
    ("stripe test card", "Stripe test cards: 4242 4242 4242 4242."),
    ("auth header missing", "The Authorization header is missing from the request."),
]
