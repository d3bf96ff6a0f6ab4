export const navItems = [
  { to: "/", label: "Overview", icon: "overview" },
  { to: "/reports", label: "Reports", icon: "reports" },
  { to: "/customers", label: "Customers", icon: "customers" },
  { to: "/integrations", label: "Integrations", icon: "integrations" },
  { to: "/settings", label: "Settings", icon: "settings" },
];

export const workspace = { name: "Fernhill Coffee Co.", plan: "Growth plan" };
