export const kpis = [
  { label: "Revenue", value: "$48,920", change: "+12.4%", good: true },
  { label: "Orders", value: "1,862", change: "+6.1%", good: true },
  { label: "Avg. order value", value: "$26.27", change: "+5.9%", good: true },
  { label: "Refund rate", value: "1.3%", change: "+0.4 pt", good: false },
];

export const weeklyRevenue = [
  { label: "Aug 4", revenue: 10240 },
  { label: "Aug 11", revenue: 11080 },
  { label: "Aug 18", revenue: 9870 },
  { label: "Aug 25", revenue: 11930 },
  { label: "Sep 1", revenue: 12410 },
  { label: "Sep 8", revenue: 11760 },
  { label: "Sep 15", revenue: 12980 },
  { label: "Sep 22", revenue: 13620 },
];

export const topProducts = [
  { name: "Hillside House Blend 1 kg", units: 412, revenue: "$11,536" },
  { name: "Ethiopia Guji, 250 g", units: 388, revenue: "$6,790" },
  { name: "Cold Brew Concentrate 1 L", units: 301, revenue: "$5,418" },
  { name: "Decaf Colombia, 250 g", units: 214, revenue: "$3,531" },
  { name: "Ceramic Pour-over Set", units: 76, revenue: "$3,344" },
];
