"""What a user can read on a live page: its visible text in reading order, and the text it hides.

The one rule for "visible" that page-text evidence, the judge's ``read_dom`` tool and the gate's blank-page
check share (so a candidate cannot show a judge text that no user sees). A text node is visible when

- no ancestor has ``display: none`` (which the ``hidden`` attribute sets), ``opacity: 0`` or
  ``content-visibility: hidden``, and its own computed ``visibility`` is ``visible``;
- it has client rects at least ``MIN_PX`` wide and high, and some of that area survives every clip
  between it and the page: ``overflow: hidden``/``clip`` boxes, the ``clip`` property, ``clip-path:
  inset()`` — so the usual screen-reader-only pattern (a 1 px box, clipped) counts as hidden, since a
  sighted user sees nothing of it (the ARIA snapshot still carries such text);
- that area lies inside the page's scrollable area: text positioned off to the left or top is hidden,
  text below the fold (or inside a scroll container, scrolled away) is visible, since a user can scroll
  to it; a fixed element must be inside the viewport.

Text is read in DOM (flat-tree) order; text of another box continues the line only when it starts level
with, and right of, where the previous text ended, else it starts a new line. Form fields show what a user
sees in them: ``[value]``, ``[placeholder: …]`` when empty, ``[x]`` / ``[ ]`` for checkboxes, bullets for
passwords. Visible images, SVGs, canvases, videos and frames are counted (a page of pictures is not blank).
Not judged: text whose colour matches its background, text covered by another element, CSS generated
content (``::before``), text inside iframes. The reader runs in the page's own JavaScript world, so the
page's scripts can break it (evidence then falls back to the HTML's text, see evaluate.evidence.page_text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codesign.runtime.waiting import ACTION_BOUND_S, bounded

TEXT_CAP = 200_000  # characters kept of each of visible and hidden text (the judge sees far less)

# (root, cap) => {visible, hidden: [{text, why}], media, truncated}. root null: the whole document.
VISIBLE_TEXT_JS = r"""(root, cap) => {
  const MIN_PX = 2;
  const html = document.documentElement, body = document.body;
  const FULL = [-Infinity, -Infinity, Infinity, Infinity];
  const cut = (a, b) => [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  const big = a => a[2] - a[0] >= MIN_PX && a[3] - a[1] >= MIN_PX;
  const styles = new Map(), whys = new Map(), areas = new Map();
  const style = el => { let s = styles.get(el); if (!s) { s = getComputedStyle(el); styles.set(el, s); } return s; };
  // The parent in the rendered (flat) tree: a slotted node's slot, a shadow root's host.
  const parentOf = n => n.assignedSlot || n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const scrolls = v => v === 'auto' || v === 'scroll' || v === 'overlay';

  // The page's scrollable area in viewport coordinates; a viewport that does not scroll shows only itself.
  const viewportOverflow = axis => {
    const own = style(html)[axis];
    return own === 'visible' && body ? style(body)[axis] : own;
  };
  const se = document.scrollingElement || html;
  const width = ['hidden', 'clip'].includes(viewportOverflow('overflowX')) ? html.clientWidth : se.scrollWidth;
  const height = ['hidden', 'clip'].includes(viewportOverflow('overflowY')) ? html.clientHeight : se.scrollHeight;
  const pageArea = [-scrollX, -scrollY, width - scrollX, height - scrollY];
  const viewportArea = [0, 0, innerWidth, innerHeight];

  // A closed <details> shows only its summary (the rest sits in a closed UA shadow root, not seen from here).
  const folded = (node, parent) => parent.localName === 'details' && !parent.open
    && !(node.localName === 'summary' && node === parent.querySelector(':scope > summary'));
  // Why the content of el is hidden by style ('' when it is not): el's or an ancestor's display, opacity
  // or content-visibility, or a closed <details> around it.
  const contentWhy = el => {
    if (!el) return '';
    if (whys.has(el)) return whys.get(el);
    const s = style(el), parent = parentOf(el);
    let why = '';
    if (s.display === 'none') why = el.hasAttribute('hidden') ? 'hidden attribute' : 'display:none';
    else if (parseFloat(s.opacity) === 0) why = 'opacity:0';
    else if (s.contentVisibility === 'hidden') why = 'content-visibility:hidden';
    else if (parent && folded(el, parent)) why = 'in a closed <details>';
    else why = contentWhy(parent);
    whys.set(el, why);
    return why;
  };

  // The box el's own position is relative to, for clipping: null is the viewport (fixed elements).
  const makesContainingBlock = s => s.transform !== 'none' || s.filter !== 'none' || s.perspective !== 'none'
    || /paint|layout|strict|content/.test(s.contain || '');
  const containingBlock = el => {
    const pos = style(el).position;
    if (pos !== 'absolute' && pos !== 'fixed') return parentOf(el);
    for (let a = parentOf(el); a; a = parentOf(a)) {
      const s = style(a);
      if (makesContainingBlock(s) || (pos === 'absolute' && s.position !== 'static')) return a;
    }
    return pos === 'fixed' ? null : html;
  };

  // The clip el applies to its content, in viewport coordinates.
  const px = (v, size) => v.endsWith('%') ? parseFloat(v) / 100 * size : parseFloat(v) || 0;
  const ownClip = el => {
    if (el === html) return FULL;  // the viewport: pageArea
    const s = style(el);
    const propagated = el === body && style(html).overflowX === 'visible' && style(html).overflowY === 'visible';
    const boxy = el instanceof HTMLElement && !['inline', 'contents'].includes(s.display);  // overflow applies
    const clip = /^rect\((.*)\)$/.exec(s.clip || ''), inset = /^inset\(([^)]*)\)/.exec(s.clipPath || '');
    const overflows = boxy && !propagated && (s.overflowX !== 'visible' || s.overflowY !== 'visible');
    if (!overflows && !clip && !inset) return FULL;  // most elements: no geometry needed
    let box = FULL;
    const r = el.getBoundingClientRect();
    if (overflows) {
      const left = r.left + el.clientLeft, top = r.top + el.clientTop;
      if (s.overflowX !== 'visible') box = scrolls(s.overflowX)
        ? [left - el.scrollLeft, box[1], left - el.scrollLeft + el.scrollWidth, box[3]]
        : [left, box[1], left + el.clientWidth, box[3]];
      if (s.overflowY !== 'visible') box = scrolls(s.overflowY)
        ? [box[0], top - el.scrollTop, box[2], top - el.scrollTop + el.scrollHeight]
        : [box[0], top, box[2], top + el.clientHeight];
    }
    if (clip && (s.position === 'absolute' || s.position === 'fixed')) {
      const [t, rt, b, l] = clip[1].split(/[\s,]+/);
      const at = (v, edge) => v === 'auto' ? edge : parseFloat(v);
      box = cut(box, [r.left + at(l, 0), r.top + at(t, 0), r.left + at(rt, r.width), r.top + at(b, r.height)]);
    }
    if (inset) {
      const v = inset[1].split(/\s+round\s+/)[0].trim().split(/\s+/);
      const [t, rt = t, b = t, l = rt] = v;
      box = cut(box, [r.left + px(l, r.width), r.top + px(t, r.height), r.right - px(rt, r.width),
                      r.bottom - px(b, r.height)]);
    }
    return box;
  };

  // Where el's box can be seen, and where its content can.
  const boxArea = el => {
    if (el === html) return pageArea;
    const cb = containingBlock(el);
    return cb ? area(cb) : viewportArea;
  };
  const area = el => {
    if (!areas.has(el)) areas.set(el, cut(boxArea(el), ownClip(el)));
    return areas.get(el);
  };

  // '' when a user sees part of these rects (inside where), else why not.
  const rectsWhy = (rects, where) => {
    const sized = Array.from(rects).map(r => [r.left, r.top, r.right, r.bottom]).filter(big);
    if (!sized.length) return 'zero size';
    if (sized.some(r => big(cut(r, where)))) return '';
    return sized.some(r => big(cut(r, pageArea))) ? 'clipped' : 'off the page';
  };
  const invisible = s => s.visibility !== 'visible' ? 'visibility:' + s.visibility : '';
  const elementWhy = el => {
    const s = style(el);
    return contentWhy(el) || invisible(s) || rectsWhy([el.getBoundingClientRect()], boxArea(el));
  };
  const range = document.createRange();
  // [why, rects]: why '' when a user sees part of the text node, rects its sized client rects.
  const textWhy = (node, parent) => {
    const why = (folded(node, parent) && 'in a closed <details>') || contentWhy(parent) || invisible(style(parent));
    if (why) return [why, []];
    range.selectNodeContents(node);
    const rects = Array.from(range.getClientRects()).filter(r => r.width >= MIN_PX && r.height >= MIN_PX);
    return [rectsWhy(rects, area(parent)), rects];
  };

  // The box a piece of text belongs to: its nearest ancestor that is not inline.
  const blocks = new Map();
  const blockOf = el => {
    if (!el) return html;
    if (blocks.has(el)) return blocks.get(el);
    const block = ['inline', 'contents'].includes(style(el).display) ? blockOf(parentOf(el)) : el;
    blocks.set(el, block);
    return block;
  };

  const visible = [], hidden = [];
  let size = 0, hiddenSize = 0, truncated = false, media = 0;
  let last = null, lastRect = null, space = false;
  // Text of another box continues the line when it starts right of where the previous text ended, level with it;
  // text of the same box is apart when the page shows a gap (a margin) between the two.
  const sameLine = (r, p) => p !== null && r.top < p.bottom - 1 && r.bottom > p.top + 1 && r.left >= p.right - 1;
  const separator = (box, first) => {
    if (box !== last) return sameLine(first, lastRect) ? ' ' : '\n';
    return space || (sameLine(first, lastRect) && first.left - lastRect.right >= 3) ? ' ' : '';
  };
  const emit = (text, box, first, end) => {
    if (size >= cap) { truncated = true; return; }
    if (last !== null) visible.push(separator(box, first));
    visible.push(text);
    size += text.length;
    last = box; lastRect = end; space = false;
  };
  const hide = (text, why, box) => {
    if (hiddenSize >= cap) { truncated = true; return; }
    const prev = hidden[hidden.length - 1];
    if (prev && prev.why === why && prev.box === box) prev.text += ' ' + text;
    else hidden.push({text, why, box});
    hiddenSize += text.length;
  };
  const fieldText = el => {
    const tag = el.localName, type = (el.type || '').toLowerCase();
    if (tag === 'select') return '[' + Array.from(el.selectedOptions).map(o => o.text.trim()).join(', ') + ']';
    if (type === 'checkbox' || type === 'radio') return el.checked ? '[x]' : '[ ]';
    if (['button', 'submit', 'reset'].includes(type)) return el.value || (type === 'reset' ? 'Reset' : 'Submit');
    if (type === 'image' || type === 'file') return '';
    const value = type === 'password' ? '\u2022'.repeat(el.value.length) : el.value;
    return value ? '[' + value + ']' : (el.placeholder ? '[placeholder: ' + el.placeholder + ']' : '[ ]');
  };
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'title', 'meta', 'link', 'datalist']);
  const MEDIA = new Set(['img', 'svg', 'canvas', 'video', 'iframe', 'object', 'embed']);

  const visit = node => {
    if (node.nodeType === Node.TEXT_NODE) {
      const parent = parentOf(node);
      if (!parent) return;
      const pre = /^pre/.test(style(parent).whiteSpace) || style(parent).whiteSpace === 'break-spaces';
      const text = pre ? node.data : node.data.replace(/\s+/g, ' ');
      if (!text.trim()) { space = true; return; }
      const [why, rects] = textWhy(node, parent);
      if (why) hide(text.trim(), why, blockOf(parent));
      else emit(text, blockOf(parent), rects[0], rects[rects.length - 1]);
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
    const tag = node.localName;
    if (tag && SKIP.has(tag)) return;
    if (tag === 'br') {  // the next text starts a new line
      if (last !== null && !contentWhy(parentOf(node))) { last = node; lastRect = null; }
      return;
    }
    if (tag === 'input' || tag === 'textarea' || tag === 'select') {
      if ((node.type || '').toLowerCase() === 'hidden') return;
      const text = fieldText(node);
      if (!text) return;
      const why = elementWhy(node);
      const r = node.getBoundingClientRect();
      if (why) hide(text, why, node); else emit(text, node, r, r);
      return;
    }
    if (tag && MEDIA.has(tag) && !elementWhy(node)) media++;
    if (tag === 'iframe' || tag === 'object' || tag === 'embed' || tag === 'canvas' || tag === 'video') return;
    const kids = node.shadowRoot ? node.shadowRoot.childNodes
      : tag === 'slot' && node.assignedNodes().length ? node.assignedNodes() : node.childNodes;
    for (const kid of kids) visit(kid);
  };
  visit(root || body || html);

  const tidy = t => t.split('\n').map(line => line.replace(/[ \t\u00a0]+/g, ' ').trim()).filter(Boolean).join('\n');
  return {
    visible: tidy(visible.join('')),
    hidden: hidden.map(h => ({text: tidy(h.text), why: h.why})).filter(h => h.text),
    media, truncated,
  };
}"""


@dataclass
class RenderedText:
    """A page's (or an element's) text as rendered: what a user can read, and what is there but hidden."""

    visible: str = ""
    hidden: list[dict[str, str]] = field(default_factory=list)  # {"text": …, "why": "display:none" | …}
    media: int = 0  # visible images, SVGs, canvases, videos, frames
    truncated: bool = False
    from_html: bool = False  # read from stored HTML, not a live page: hidden text is not told apart

    @property
    def blank(self) -> bool:
        """Nothing a user can see: no visible text and no visible media."""
        return not self.visible.strip() and not self.media


async def rendered_text(page: Any, what: str, element: Any = None, cap: int = TEXT_CAP) -> RenderedText:
    """The rendered text of ``page`` (or of ``element``, a Locator on it), read while the page is live."""
    if element is None:
        call = page.evaluate(f"(cap) => ({VISIBLE_TEXT_JS})(null, cap)", cap)
    else:  # an element found on the settled page: gone again later is an action's error, as for any target
        call = element.evaluate(VISIBLE_TEXT_JS, cap, timeout=ACTION_BOUND_S * 1000)
    return RenderedText(**await bounded(call, page, what))
