/*
 * card.h - a repository's card (its README.md) as HTML for the web page.
 */
#ifndef HM_MIRROR_CARD_H
#define HM_MIRROR_CARD_H

#include <stddef.h>

/*
 * Render len bytes of Markdown as GitHub renders a card (tables, strikethrough, autolinks) in
 * cmark-gfm's safe mode: raw HTML becomes a comment, javascript:, vbscript:, file: and most data:
 * links are emptied. The YAML front matter (the card's metadata, shown apart) is left out. An image
 * or link that names a file of the repository (a relative path that stays inside it) points at the
 * mirror's own URL for it: file_url (borrowed) followed by the path, percent-escaped. An image
 * anywhere else becomes a link to it, so showing the card loads nothing from outside the mirror.
 * Returns malloc'd HTML (never NULL).
 */
char *mirror_card_html(const char *md, size_t len, const char *file_url);

#endif
