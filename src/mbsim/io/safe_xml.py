"""The one XML parser mbsim uses on untrusted files (URDF, SRDF).

URDF and SRDF files come from anywhere, so the parser is hardened against the classic XML
attacks: no entity expansion (billion laughs, external entities), no DTD loading or validation,
no network access, no huge-tree mode (libxml2's depth and size limits stay on). XInclude is
never processed (lxml does it only when ``.xinclude()`` is called, which mbsim never does).
Comments and processing instructions are dropped: nothing reads them.
"""

from __future__ import annotations

from lxml import etree


def safe_parser() -> etree.XMLParser:
    """A new hardened lxml parser (module docstring); parsers are not thread-safe, so each
    parse gets its own."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def refused_doctype(root: etree._Element) -> str | None:
    """Why a parsed document's DOCTYPE is refused, or None. Entity declarations are refused
    outright (libxml2 still substitutes internal entities in attribute values even with
    ``resolve_entities=False``, so a declared entity could silently rename a link), and so is
    an external DTD (never loaded, so entities it defines would silently vanish)."""
    docinfo = root.getroottree().docinfo
    dtd = docinfo.internalDTD
    if dtd is not None:
        names = [e.name for e in dtd.iterentities()]
        if names:
            listed = ", ".join(repr(n) for n in names[:5])
            return (
                f"declares XML entities ({listed}) in its DOCTYPE, which mbsim refuses to expand "
                "for safety"
            )
    url = docinfo.system_url or docinfo.public_id
    if url:
        return f"names an external DTD '{url}' in its DOCTYPE, which mbsim refuses"
    return None
