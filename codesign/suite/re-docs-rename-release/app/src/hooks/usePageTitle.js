import { useEffect } from "react";

export default function usePageTitle(title) {
  useEffect(() => {
    document.title = title ? `${title} · Pipewright docs` : "Pipewright — Declarative build pipelines for JavaScript monorepos";
  }, [title]);
}
