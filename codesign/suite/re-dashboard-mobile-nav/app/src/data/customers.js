export const customers = [
  { id: "c-1042", name: "Blue Door Bakery", segment: "Wholesale", orders: 48, ltv: "$9,840", lastOrder: "Sep 22", status: "Active" },
  { id: "c-1043", name: "Marta Kowalczyk", segment: "Subscription", orders: 19, ltv: "$532", lastOrder: "Sep 20", status: "Active" },
  { id: "c-1051", name: "Riverside Co-working", segment: "Wholesale", orders: 31, ltv: "$6,215", lastOrder: "Sep 18", status: "Active" },
  { id: "c-1066", name: "Tomás Aguilar", segment: "Retail", orders: 7, ltv: "$184", lastOrder: "Sep 16", status: "Active" },
  { id: "c-1070", name: "The Reading Room Café", segment: "Wholesale", orders: 22, ltv: "$4,410", lastOrder: "Sep 9", status: "At risk" },
  { id: "c-1084", name: "Priya Raman", segment: "Subscription", orders: 12, ltv: "$336", lastOrder: "Sep 21", status: "Active" },
  { id: "c-1091", name: "Greenline Grocers", segment: "Wholesale", orders: 15, ltv: "$3,075", lastOrder: "Aug 28", status: "At risk" },
  { id: "c-1103", name: "Samuel Osei", segment: "Retail", orders: 3, ltv: "$79", lastOrder: "Jul 30", status: "Churned" },
  { id: "c-1110", name: "Harbour Yoga Studio", segment: "Wholesale", orders: 9, ltv: "$1,260", lastOrder: "Sep 19", status: "Active" },
  { id: "c-1122", name: "Lena Fischer", segment: "Subscription", orders: 6, ltv: "$168", lastOrder: "Sep 14", status: "Active" },
];
