"""Fetch the project's data assets from a local mirror, or from their public URLs.

The asset list (destination, URL, sha256) lives once, in `project.yml`. With a mirror
directory (`SPACY_ARBO_DATA`, laid out like the asset destinations below `assets/`)
nothing is downloaded; either way every file's checksum is verified.
"""
import shutil
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

import srsly

from .util import ArboError, PathLike, atomic_path, file_sha256

ASSETS_DIR = "assets"


def read_assets(project_file: PathLike) -> List[Dict[str, str]]:
    project = srsly.read_yaml(project_file)
    assets = project.get("assets") or []
    for number, asset in enumerate(assets, start=1):
        for key in ("dest", "url", "checksum"):
            if not asset.get(key):
                raise ArboError(f"{project_file}: asset {number} has no '{key}'.")
    return assets


def fetch_asset(asset: Dict[str, str], root: Path, mirror: Optional[Path]) -> str:
    """Copy or download one asset unless a verified copy is there; return what was done."""
    dest = root / asset["dest"]
    if dest.exists() and file_sha256(dest) == asset["checksum"]:
        return "present"
    relative = Path(asset["dest"]).relative_to(ASSETS_DIR) if asset["dest"].startswith(ASSETS_DIR + "/") else Path(asset["dest"])
    with atomic_path(dest) as tmp:
        if mirror is not None:
            source = mirror / relative
            if not source.exists():
                raise ArboError(f"Mirror {mirror} has no {relative} (asset {asset['dest']}).")
            shutil.copyfile(source, tmp)
            how = f"copied from {source}"
        else:
            try:
                urllib.request.urlretrieve(asset["url"], tmp)
            except OSError as err:
                raise ArboError(f"Cannot download {asset['url']}: {err}") from None
            how = f"downloaded from {asset['url']}"
        actual = file_sha256(tmp)
        if actual != asset["checksum"]:
            raise ArboError(f"{asset['dest']}: checksum {actual} does not match {asset['checksum']} ({how}).")
    return how


def fetch_assets(project_file: PathLike, mirror: Optional[PathLike] = None) -> List[str]:
    project_file = Path(project_file)
    mirror_path = Path(mirror) if mirror else None
    if mirror_path is not None and not mirror_path.is_dir():
        raise ArboError(f"Data mirror '{mirror}' is not a directory.")
    return [f"{a['dest']}: {fetch_asset(a, project_file.parent, mirror_path)}" for a in read_assets(project_file)]
