"""Sentences without spaces (Chinese, Japanese, Korean): the scorer's features for them.

The scorer was trained on English sessions only, so its word features see nothing in a Japanese sentence. This
module maps the same kinds of cue (narration, question, offer, status, cause, negation, requirement, hedge,
decision, a present-tense statement) from CJK words to the feature names the model already weighs, and spaces
out Latin runs inside CJK text so identifier and value patterns match (`\b` sees no boundary between a kanji and
a Latin letter). The word lists were written from the grammar of the languages, a priori, and were not tuned on
any labelled session (the held-out Japanese sessions only judge them).
"""
from __future__ import annotations

import re
from functools import cache

from .sentences import cjk_chars

__all__ = ["is_cjk", "spaced", "cjk_features", "cjk_namespace_cues", "is_cjk_decision"]

_CJK_CLASS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_SPACE_AROUND = rf"(?<=[{_CJK_CLASS}])(?=[A-Za-z0-9`$./@_-])|(?<=[A-Za-z0-9`)_])(?=[{_CJK_CLASS}])"
MIN_SHARE = 0.3  # a sentence is CJK when at least this share of its non-space characters are CJK


def is_cjk(sentence: str) -> bool:
    letters = len(sentence.replace(" ", ""))
    return bool(letters) and cjk_chars(sentence) >= max(4, MIN_SHARE * letters)


def spaced(sentence: str) -> str:
    """`sentence` with a space between CJK and Latin runs ("データベースはPostgreSQLを" -> "データベースは PostgreSQL を")."""
    return _compiled()["space"].sub(" ", sentence)


_CUES = [
    # the speaker about to do something (narration) and reports of doing it
    ("narr_start", r"(?:します|しましょう|してみます|していきます|を確認|を調査|を読み込|を見て|を実行|に進み)(?:ます)?[。！]?$"
                   r"|^(?:まず|次に|それでは|では|続いて)[、，]"),
    ("question", r"(?:ですか|ますか|でしょうか|かな|か)[？?]?$|[？?]$"),
    ("offer", r"(?:しますか|どうしますか|どちらにしますか|よろしいですか|しましょうか|いかがですか)[？?]?$"),
    ("status", r"完了|済み|成功しました|パスしました|作成しました|コミットしました|マージ|プッシュしました"),
    ("causal", r"ため|ので|から[、。]|原因|理由|結果として|よって"),
    ("diag", r"原因は|問題は|根本原因|バグは|ことが(?:分かり|わかり)ました|判明"),
    ("neg", r"ない|ません|ず[、。]|不要|なし|できない|しない|禁止"),
    ("req", r"必要|必須|常に|必ず|使う|使用|返す|返します|デフォルト|のみ|だけ|限定|要求|前提"),
    ("hedge", r"かもしれ|と思います|可能性|おそらく|たぶん|多分|ようです|みたい"),
    ("first_person", r"^(?:私|僕|我々|私たち)"),
    ("present_verb", r"(?:です|ます|る|い|だ)[。]?$"),
]
_DECISION = r"決定|採用|方針|選択|決め|にする|にします|ことにし|で進め|でいく|に統一|に変更"
_NAMESPACE_CUES = [
    ("decisions", r"決定|採用|方針|選択|にする|で進め|トレードオフ|推奨"),
    ("config", r"設定|環境変数|ポート|デフォルト|オプション|フラグ|構成"),
    ("testing", r"テスト|モック|カバレッジ|検証"),
    ("security", r"セキュリティ|認証|トークン|脆弱|暗号|権限|シークレット"),
    ("performance", r"パフォーマンス|性能|速度|遅い|高速|レイテンシ|メモリ"),
    ("apis", r"API|エンドポイント|関数|メソッド|インターフェース|レスポンス|リクエスト"),
    ("patterns", r"規約|慣習|ルール|常に|必ず|パターン|ベストプラクティス"),
    ("learnings", r"原因|バグ|エラー|問題|失敗|修正|判明"),
    ("tech_debt", r"TODO|技術的負債|後で|未対応|見送り"),
    ("context", r"プロジェクト|リポジトリ|ディレクトリ|ブランチ|環境|バージョン"),
]


@cache
def _compiled() -> dict:
    """The patterns, compiled on the first CJK sentence (most sessions have none: a hook starts faster)."""
    return {"space": re.compile(_SPACE_AROUND), "decision": re.compile(_DECISION),
            "cues": {name: re.compile(rx) for name, rx in _CUES},
            "namespaces": {name: re.compile(rx) for name, rx in _NAMESPACE_CUES}}


def cjk_features(sentence: str) -> dict[str, float]:
    """The scorer's hand-made features (`f:` names) that the CJK cue words of `sentence` stand for."""
    f: dict[str, float] = {}
    s = sentence.strip()
    for name, rx in _compiled()["cues"].items():
        if rx.search(s):
            f["f:" + name] = 1.0
    if f.get("f:narr_start"):
        f["f:narration"] = 1.0
    return f


def is_cjk_decision(sentence: str) -> bool:
    """A CJK sentence that states a decision (決定, 採用, 方針, にする, で進める ...): an explicit signal."""
    return cjk_chars(sentence) > 0 and bool(_compiled()["decision"].search(sentence))


def cjk_namespace_cues(sentence: str) -> dict[str, float]:
    """`n:` namespace cue features of a CJK sentence (as `scorer.namespace_of` reads them)."""
    return {"n:" + name: 1.0 for name, rx in _compiled()["namespaces"].items() if rx.search(sentence)}
