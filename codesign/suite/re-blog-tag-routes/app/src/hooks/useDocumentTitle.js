import { useEffect } from "react";

export const SITE_NAME = "Heron Engineering";

/** Sets the browser tab title, e.g. "Some post · Heron Engineering"; no argument gives the blog's home title. */
export function useDocumentTitle(pageTitle) {
  useEffect(() => {
    document.title = pageTitle ? `${pageTitle} · ${SITE_NAME}` : `${SITE_NAME} Blog`;
  }, [pageTitle]);
}
