// Shown in the header and the footer.
export const PRODUCT_NAME = "Pipewright";
export const VERSION = "2.4.0";
